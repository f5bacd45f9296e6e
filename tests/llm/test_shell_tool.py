"""The ``shell`` tool through a real ``oma-host`` over stdio whose model is
the provider simulator: real commands run by ``/bin/sh`` in the agent's
``cwd``, their output streamed as ``tool_output`` events and sent to the
model with the exit code; every process it started ended (those that left
its process group and cleared the host's marker too) on timeout, on a
cancelled turn, when the command exits leaving them behind, and when the
host exits or is killed; the time limit asked for in ``timeoutMs``; the
output kept to its cap, no secret of the host in the command's environment,
and the permission policy asking (and matching rules one simple command at
a time) before anything runs."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config, results_sent
from tests.server.helpers import kill_quietly, pid_alive

KEY = "sk-ant-api03-shell-test-key-DO-NOT-LEAK-0123456789"
HOST_SECRETS = {
    "ANTHROPIC_API_KEY": KEY,
    "OPENAI_API_KEY": "sk-openai-shell-test-DO-NOT-LEAK-987654321",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-shell-test-DO-NOT-LEAK",
    "AWS_ACCESS_KEY_ID": "AKIASHELLTESTKEYID00",
    "GITHUB_TOKEN": "ghp_shelltestDONOTLEAK0123456789abcdef",
    # An allowed name carrying the agent's key, and a proxy carrying a password.
    "LC_SMUGGLED": f"x-{KEY}",
    "HTTPS_PROXY": "http://user:hunter2@proxy.example:3128",
    "DATABASE_URL": "postgres://app:db-pw-DO-NOT-LEAK@db.example:5432/app",
    # Names that say secret as a word of theirs, and values shaped like credentials.
    "MYSQL_PWD": "mysql-pw-DO-NOT-LEAK",
    "GPG_PASSPHRASE": "gpg-phrase-DO-NOT-LEAK",
    "REGISTRY_PASS": "registry-pass-DO-NOT-LEAK",
    "SENTRY_DSN": "https://dsnpublickeyDONOTLEAK@o1.ingest.sentry.example/42",
    "DB_CONN": "Server=db;User Id=app;Password=conn-pw-DO-NOT-LEAK;",
    "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2IifQ.c2lnbmF0dXJlRE9OT1RMRUFL",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.example/services/T0/B0/webhookDONOTLEAK",
    "SESSION_COOKIE": "sid=cookie-DO-NOT-LEAK",
    "LC_TICKET": "ghp_shelltestDONOTLEAKsmuggled0123456789",
}
# What a command needs of the host's environment (an SSH agent, a JDK, the
# directory the user was in before: OLDPWD is no password).
HOST_TOOLS = {
    "SSH_AUTH_SOCK": "/tmp/ssh-test/agent.1",
    "JAVA_HOME": "/opt/jdk-test",
    "OLDPWD": "/tmp/previous-test-dir",
}
ALLOW_SHELL = [{"tool": "shell", "action": "allow"}]


@pytest.fixture
def host_variables() -> dict[str, str]:
    return {**HOST_SECRETS, **HOST_TOOLS}


@pytest.fixture
def host_options() -> dict[str, Any] | None:
    """The shell tool is the subject, not the transport: the default one."""
    return None


def shell(call_id: str, command: str, **more: Any) -> dict[str, Any]:
    return tool_use(call_id, "shell", command=command, **more)


async def create(host: HostClient, sim: Simulator, cwd: Path, **extra: Any) -> str:
    extra.setdefault("permissions", ALLOW_SHELL)
    config = llm_config(sim, "anthropic", tools=["shell"], cwd=str(cwd), **extra)
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


async def stream(host: HostClient, agent: str, token: str) -> dict[str, Any]:
    params = {"agentId": agent, "input": "go", "partialResultToken": token}
    result: dict[str, Any] = await host.request("agent/stream", params)
    return result


def sent(sim: Simulator) -> dict[str, dict[str, Any]]:
    """The tool results the model was sent after the first turn, by call id."""
    return {block["tool_use_id"]: block for block in results_sent(sim, 1)}


def streamed(host: HostClient, token: str, call_id: str) -> str:
    return "".join(
        event["data"]["text"]
        for event in host.progress(token)
        if event["type"] == "tool_output" and event["data"]["toolUseId"] == call_id
    )


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


async def gone(pid: int) -> bool:
    for _ in range(200):
        if not pid_alive(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_command_runs_in_cwd_its_output_streamed_and_sent_with_the_exit_code(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    command = "pwd; echo to-stdout; echo to-stderr >&2; sleep 0.3; echo later; exit 3"
    sim.script(reply(shell("s", command), shell("ok", "true")), Reply.text("done"))
    result = await stream(host, agent, "t")
    assert result["success"] is True
    results = sent(sim)
    output = f"{os.path.realpath(tmp_path)}\nto-stdout\nto-stderr\nlater\n"
    # A failing exit is a normal result the model reads, said plainly.
    assert results["s"]["content"] == output + "[exit code 3: the command failed]"
    assert not results["s"].get("is_error")
    assert results["ok"]["content"] == "(no output)\n[exit code 0]"
    # Streamed as it came, before the result, in more than one piece.
    events = host.progress("t")
    pieces = [e for e in events if e["type"] == "tool_output" and e["data"]["toolUseId"] == "s"]
    assert len(pieces) >= 2
    assert streamed(host, "t", "s") == output
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_output") < kinds.index("tool_result")
    assert result["toolCalls"][0]["output"] == results["s"]["content"]


async def test_a_timeout_ends_the_command_and_every_process_it_started(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    command = "sleep 300 & echo $! > pids; echo $$ >> pids; echo waiting; wait"
    sim.script(reply(shell("s", command, timeoutMs=1000)), Reply.text("done"))
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    assert result["is_error"] is True
    assert result["content"].startswith(
        "shell: timed out after 1 s: the command and every process it started were ended "
        "(SIGTERM, then SIGKILL after 1 s)"
    )
    assert result["content"].endswith("Its output until then:\nwaiting\n")
    background, sh = pids_in(tmp_path / "pids")
    assert await gone(background) and await gone(sh)


async def test_the_model_cannot_ask_for_more_than_tool_timeout_ms(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path, toolTimeoutMs=1500)
    sim.script(reply(shell("s", "sleep 60", timeoutMs=600_000)), Reply.text("done"))
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    assert result["content"].startswith("shell: timed out after 1.5 s")


async def test_the_model_asks_for_less_time_in_timeout_ms(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path, toolTimeoutMs=20_000)
    sim.script(reply(shell("s", "sleep 60", timeoutMs=500)), Reply.text("done"))
    await stream(host, agent, "t")
    # The limit as the model sees it: timeoutMs, in milliseconds.
    (tool,) = [tool for tool in sim.requests[0].body["tools"] if tool["name"] == "shell"]
    assert sorted(tool["input_schema"]["properties"]) == [
        "command",
        "reason",
        "timeoutMs",
        "unsandboxed",
    ]
    assert "milliseconds" in tool["input_schema"]["properties"]["timeoutMs"]["description"]
    (result,) = results_sent(sim, 1)
    assert result["content"].startswith("shell: timed out after 0.5 s")


async def test_an_old_timeout_is_refused_naming_timeout_ms_and_runs_nothing(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    # Seconds here once, milliseconds in other agents' shells: guessing its
    # unit could cut a command short, so the model is told what to send.
    agent = await create(host, sim, tmp_path)
    sim.script(reply(shell("s", "touch ran", timeout=30)), Reply.text("done"))
    result = await stream(host, agent, "t")
    assert result["success"] is True
    (sent_back,) = results_sent(sim, 1)
    assert sent_back["is_error"] is True
    assert sent_back["content"] == (
        "shell: timeout is not an input of this tool: give the time limit as timeoutMs, "
        "in milliseconds"
    )
    assert not (tmp_path / "ran").exists()


async def test_background_processes_left_running_are_ended_when_it_exits(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    command = "sleep 300 >/dev/null 2>&1 & echo $! > pids; echo started"
    sim.script(reply(shell("s", command)), Reply.text("done"))
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    assert result["content"] == (
        "started\n[exit code 0]\n[processes it left running in the background were ended]"
    )
    (background,) = pids_in(tmp_path / "pids")
    assert await gone(background)


# Processes a command starts outside its process group, each writing its pid
# to {pid}: in a session of its own (setsid); also without the host's marker
# in its environment, cleared whole (env -i) or alone (env -u); one deaf to
# SIGTERM as well; the last orphaned at once (its parent, a subshell, exits),
# so it is the host's child and no longer the command's.
QUIET = "</dev/null >/dev/null 2>&1"
ESCAPES = {
    "setsid": f"setsid /bin/sh -c 'echo $$ > {{pid}}; exec sleep 300' {QUIET} &",
    "setsid-env-i": f"setsid env -i /bin/sh -c 'echo $$ > {{pid}}; exec /bin/sleep 300' {QUIET} &",
    "setsid-env-i-no-term": (
        "setsid env -i /bin/sh -c 'trap \"\" TERM; echo $$ > {pid}; exec /bin/sleep 300' "
        f"{QUIET} &"
    ),
    "subshell-env-u": (
        f"(setsid env -u OMA_HOST_SPAWN /bin/sh -c 'echo $$ > {{pid}}; exec sleep 300' {QUIET} &)"
    ),
}
# Waits (up to 10 s) until the escaped process has written its pid.
AWAIT_PID = 'i=0; while [ ! -s "{pid}" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done'


def escaping(spelling: str, pid_file: Path, then: str) -> str:
    """A command line that starts an escaping process, waits for its pid, then runs ``then``."""
    escape = ESCAPES[spelling].format(pid=pid_file)
    return f"{escape}\n{AWAIT_PID.format(pid=pid_file)}; {then}"


@pytest.mark.parametrize("spelling", sorted(ESCAPES))
async def test_a_process_that_left_the_group_ends_when_the_command_exits(
    host: HostClient, sim: Simulator, tmp_path: Path, spelling: str
) -> None:
    agent = await create(host, sim, tmp_path)
    pid_file = tmp_path / "escaped.pid"
    sim.script(
        reply(shell("s", escaping(spelling, pid_file, "echo started"))),
        Reply.text("done"),
    )
    await stream(host, agent, "t")
    (escaped,) = pids_in(pid_file)
    try:
        assert await gone(escaped), f"{spelling}: the process outlived the call"
        (result,) = results_sent(sim, 1)
        assert result["content"] == (
            "started\n[exit code 0]\n[processes it left running in the background were ended]"
        )
    finally:
        kill_quietly(escaped)


@pytest.mark.parametrize("ending", ["exit", "SIGKILL"])
@pytest.mark.parametrize("spelling", sorted(ESCAPES))
async def test_a_process_that_left_the_group_ends_with_the_host(
    sim: Simulator, tmp_path: Path, spelling: str, ending: str
) -> None:
    """The host ends while the command runs: by ``exit`` (it cancels the
    call), or by SIGKILL (it can do nothing)."""
    host = await HostClient.spawn(env=HOST_SECRETS)
    escaped: int | None = None
    try:
        await host.initialize()
        agent = await create(host, sim, tmp_path)
        pid_file = tmp_path / "escaped.pid"
        command = escaping(spelling, pid_file, "echo started; sleep 300")
        sim.script(reply(shell("s", command)), Reply.text("never asked"))
        _, pending = host.start_request(
            "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "t"}
        )
        for _ in range(400):
            if "started" in streamed(host, "t", "s"):
                break
            await asyncio.sleep(0.025)
        (escaped,) = pids_in(pid_file)
        assert pid_alive(escaped)
        if ending == "SIGKILL":
            assert host.process is not None
            host.process.kill()
        code = await host.close()
        assert code == (-signal.SIGKILL if ending == "SIGKILL" else 0)
        # Its stderr closes once its warden, which holds it, has exited too.
        await asyncio.wait_for(host.stderr_text(), 10)
        assert await gone(escaped), f"{spelling}: the process outlived the host's {ending}"
        # The host ended before it answered (or answered the call cancelled).
        await asyncio.wait([pending], timeout=5)
        assert pending.done() and (pending.exception() or pending.result()["error"])
    finally:
        await host.close()
        if escaped is not None:
            kill_quietly(escaped)


async def test_a_cancelled_turn_ends_the_command_and_every_process_it_started(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    command = "sleep 300 & echo $! > pids; echo $$ >> pids; echo started; wait"
    sim.script(reply(shell("s", command)), Reply.text("never asked"))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "c"}
    )
    for _ in range(400):
        if "started" in streamed(host, "c", "s"):
            break
        await asyncio.sleep(0.025)
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 10)
    assert response["error"]["code"] == -32800
    background, sh = pids_in(tmp_path / "pids")
    assert await gone(background) and await gone(sh)
    assert len(sim.requests) == 1


async def test_a_command_that_kills_what_runs_it_is_still_ended(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    # The command's parent is what ends its processes; killed, the host ends
    # the command's process group itself.
    command = "sleep 300 & echo $! > pids; echo $$ >> pids; kill -9 $PPID; sleep 300"
    agent = await create(host, sim, tmp_path)
    sim.script(reply(shell("s", command)), Reply.text("done"))
    await stream(host, agent, "t")
    background, sh = pids_in(tmp_path / "pids")
    assert await gone(background) and await gone(sh)
    (result,) = results_sent(sim, 1)
    assert result["content"] == "(no output)\n[exit status unknown]"


async def test_a_pipeline_ends_its_writer_as_a_terminal_would(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    # SIGPIPE is at its default for the command: ``yes`` ends quietly when
    # ``head`` has had its line, as in a terminal.
    agent = await create(host, sim, tmp_path)
    sim.script(
        reply(shell("s", "yes | head -n 1; trap")),
        Reply.text("done"),
    )
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    assert result["content"] == "y\n[exit code 0]"


async def test_output_past_the_cap_keeps_its_head_and_tail(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    sim.script(reply(shell("s", "seq 1 30000")), Reply.text("done"))
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    whole = "".join(f"{n}\n" for n in range(1, 30001))
    head, tail = whole[:10_000], whole[-20_000:]
    cut = len(whole) - 30_000
    assert result["content"] == (
        f"{head}\n[... {cut} characters cut ...]\n{tail.rstrip()}\n[exit code 0]"
    )
    # The stream carries all of it.
    assert streamed(host, "t", "s") == whole


async def test_the_command_sees_no_secret_of_the_host(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    sim.script(reply(shell("s", "env")), Reply.text("done"))
    await stream(host, agent, "t")
    (result,) = results_sent(sim, 1)
    variables = dict(line.split("=", 1) for line in result["content"].splitlines() if "=" in line)
    assert variables["PATH"] == os.environ["PATH"]
    assert variables["HOME"] == os.environ["HOME"]
    assert variables["PWD"] == os.path.realpath(tmp_path)
    assert [name for name in HOST_SECRETS if name in variables] == []
    for value in HOST_SECRETS.values():
        assert value not in result["content"]
    # What the user's tools need passes.
    assert variables["SSH_AUTH_SOCK"] == HOST_TOOLS["SSH_AUTH_SOCK"]
    assert variables["JAVA_HOME"] == HOST_TOOLS["JAVA_HOME"]
    assert variables["OLDPWD"] == HOST_TOOLS["OLDPWD"]


async def test_a_secret_the_command_prints_is_redacted_in_the_stream_even_split(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create(host, sim, tmp_path)
    half = len(KEY) // 2
    command = f"printf '%s' '{KEY[:half]}'; sleep 0.3; printf '%s' '{KEY[half:]}'; echo"
    sim.script(reply(shell("s", command)), Reply.text("done"))
    await stream(host, agent, "t")
    text = streamed(host, "t", "s")
    assert KEY not in text and KEY[:half] not in text
    assert text == "[redacted]\n"


async def test_ask_is_the_default_and_a_denied_command_never_runs(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    agent = await create(host, sim, tmp_path, permissions=None)
    sim.script(reply(shell("s", "touch made")), Reply.text("done"))
    result = await stream(host, agent, "t")
    (request,) = [p for m, p in host.server_requests if m == "agent/requestPermission"]
    assert request["kind"] == "execute"
    assert request["title"] == "shell touch made"
    assert request["tool"]["target"] == "touch made"
    (event,) = [e["data"] for e in host.progress("t") if e["type"] == "permission"]
    assert (event["action"], event["decision"], event["by"]) == ("ask", "deny", "client")
    assert results_sent(sim, 1)[0]["content"] == "shell: permission denied (the user said no)"
    assert not (tmp_path / "made").exists()
    assert result["success"] is True


async def test_an_allowed_command_cannot_carry_another_past_the_rule(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    rules = [
        {"tool": "shell", "pattern": "rm *", "action": "deny"},
        {"tool": "shell", "pattern": "git status*", "action": "allow"},
    ]
    agent = await create(host, sim, tmp_path, permissions=rules)
    slipping = [
        "git status && touch pwned",
        "git status; touch pwned",
        "git status | touch pwned",
        "git status & touch pwned",
        "git status\ntouch pwned",
        "git status $(touch pwned)",
        "git status `touch pwned`",
        "git status > pwned",
        "(git status; touch pwned)",
    ]
    calls = [shell("ok", "git status 2>&1")]
    calls += [shell(f"slip{index}", command) for index, command in enumerate(slipping)]
    calls.append(shell("rm", "git status && rm -rf pwned"))
    sim.script(Reply(content=calls), Reply.text("done"))
    await stream(host, agent, "t")
    events = {
        e["data"]["toolUseId"]: e["data"] for e in host.progress("t") if e["type"] == "permission"
    }
    assert (events["ok"]["decision"], events["ok"]["by"], events["ok"]["rule"]) == (
        "allow",
        "rule",
        1,
    )
    for index in range(len(slipping)):
        decided = events[f"slip{index}"]
        assert (decided["action"], decided["decision"]) == ("ask", "deny"), slipping[index]
    # A deny rule matching any part denies without asking.
    assert (events["rm"]["action"], events["rm"]["by"], events["rm"]["rule"]) == (
        "deny",
        "rule",
        0,
    )
    asked = [p["tool"]["target"] for m, p in host.server_requests if m == "agent/requestPermission"]
    assert asked == slipping
    assert not (tmp_path / "pwned").exists()
    assert "[exit code" in sent(sim)["ok"]["content"]  # it ran (not a repository: git says so)


async def test_always_allow_covers_that_command_line_only(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True, "scope": "session"}
    agent = await create(host, sim, tmp_path, permissions=None)
    sim.script(
        reply(shell("a", "echo one"), shell("b", "echo one"), shell("c", "touch x")),
        Reply.text("done"),
    )
    await stream(host, agent, "t")
    events = {
        e["data"]["toolUseId"]: e["data"]["by"]
        for e in host.progress("t")
        if e["type"] == "permission"
    }
    assert events == {"a": "client", "b": "session", "c": "client"}
