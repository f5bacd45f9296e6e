"""The ``shell`` tool's OS sandbox through a real ``oma-host`` over stdio and
the real bubblewrap (and Landlock, with bwrap off the host's PATH), the model
being the provider simulator: in ``workspace-write`` a command writes in its
``cwd`` and a private ``TMPDIR`` (removed after) and nowhere else (``/tmp``,
``$HOME``, ``.git/hooks``, ``.oma``), reaches no server on the host's
127.0.0.1, and in ``auto`` mode runs without a permission request; in
``read-only`` it writes nowhere; a command retried ``unsandboxed`` is asked
about every time, naming the exact line."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import oma_host.workspace.landlock as landlock
from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config, results_sent
from tests.server.helpers import HostFactory

BWRAP = shutil.which("bwrap")
# Outside CI a machine without bubblewrap skips; under CI (CI set) it fails instead.
pytestmark = pytest.mark.skipif(
    (BWRAP is None or not sys.platform.startswith("linux")) and not os.environ.get("CI"),
    reason="needs bubblewrap (apt-get install bubblewrap) on Linux",
)


class Server:
    """A TCP server of the test on 127.0.0.1, counting who connects."""

    def __init__(self) -> None:
        self.connections = 0
        self.port = 0

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    found = Server()
    listening = await asyncio.start_server(found._accepted, "127.0.0.1", 0)
    found.port = listening.sockets[0].getsockname()[1]
    async with listening:
        yield found


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """The agent's cwd (a repository with hooks and an .oma folder), a
    folder beside it, and the host's $HOME."""
    work, outside, home = tmp_path / "work", tmp_path / "outside", tmp_path / "home"
    for folder in (work / ".git" / "hooks", work / ".oma", outside, home):
        folder.mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    (work / "seen.txt").write_text("read me\n")
    return {"work": work, "outside": outside, "home": home}


async def spawned(spawn_host: HostFactory, places: dict[str, Path], **env: str) -> HostClient:
    variables = {"HOME": str(places["home"]), "ANTHROPIC_API_KEY": "sk-ant-sandbox-test", **env}
    client = await spawn_host(env=variables)
    client.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    return client


async def sandbox_state(host: HostClient, agent: str) -> dict[str, Any] | None:
    """What ``agent/state`` says confines the agent's commands."""
    state = await host.request("agent/state", {"agentId": agent})
    sandbox: dict[str, Any] | None = state.get("sandbox")
    return sandbox


async def create(host: HostClient, sim: Simulator, cwd: Path, **extra: Any) -> str:
    config = llm_config(sim, "anthropic", tools=["shell"], cwd=str(cwd), **extra)
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


async def run(host: HostClient, agent: str, token: str = "t") -> dict[str, Any]:
    params = {"agentId": agent, "input": "go", "partialResultToken": token}
    result: dict[str, Any] = await host.request("agent/stream", params)
    assert result["success"] is True, result
    return result


def results(sim: Simulator, index: int = 1) -> dict[str, str]:
    return {block["tool_use_id"]: block["content"] for block in results_sent(sim, index)}


def permissions(host: HostClient, token: str = "t") -> dict[str, dict[str, Any]]:
    return {
        event["data"]["toolUseId"]: event["data"]
        for event in host.progress(token)
        if event["type"] == "permission"
    }


def asked(host: HostClient) -> list[dict[str, Any]]:
    return [
        params for method, params in host.server_requests if method == "agent/requestPermission"
    ]


def connect(port: int) -> str:
    """A command line that connects to 127.0.0.1:``port``."""
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
    return f'{sys.executable} -c "{code}"'


def shell(call_id: str, command: str, **more: Any) -> dict[str, Any]:
    return tool_use(call_id, "shell", command=command, **more)


RETRY_HINT = "unsandboxed: true and a reason"


async def test_workspace_write_in_auto_mode_writes_in_cwd_alone_unasked(
    spawn_host: HostFactory, sim: Simulator, places: dict[str, Path], server: Server
) -> None:
    host = await spawned(spawn_host, places)
    work, outside = places["work"], places["outside"]
    agent = await create(host, sim, work, permissionMode="auto")
    assert await sandbox_state(host, agent) == {"mode": "workspace-write", "confinedBy": "bwrap"}
    unconfined = await create(host, sim, work)
    assert await sandbox_state(host, unconfined) is None  # ask mode, sandbox off
    in_tmp = f"/tmp/oma-sandbox-test-{uuid.uuid4().hex}"
    calls = {
        "cwd": "echo made > made.txt && cat seen.txt && echo $TMPDIR "
        '&& echo private > "$TMPDIR/t" && cat "$TMPDIR/t"',
        "tmp": f"echo x > {in_tmp}",
        "outside": f"echo x > {outside}/f",
        "home": 'echo x > "$HOME/f"',
        "hook": "echo x > .git/hooks/pre-commit",
        "gitconfig": "echo '[core] fsmonitor = evil' >> .git/config",
        "own": "echo x > .oma/agents.json",
        "net": connect(server.port),
    }
    sim.script(reply(*(shell(key, line) for key, line in calls.items())), Reply.text("done"))
    await run(host, agent)
    assert asked(host) == []
    decided = permissions(host)
    assert {
        key: (event["decision"], event["by"]) for key, event in decided.items()
    } == dict.fromkeys(calls, ("allow", "mode"))
    sent = results(sim)
    assert (work / "made.txt").read_text() == "made\n"
    lines = sent["cwd"].splitlines()
    assert lines[0] == "read me"
    private = lines[1]
    assert lines[2:] == ["private", "[exit code 0]"]
    assert private.startswith(("/tmp/", os.environ.get("TMPDIR", "/tmp")))
    assert not os.path.exists(private)  # removed after the command
    for key in ("tmp", "outside", "home", "hook", "gitconfig", "own"):
        assert "Read-only file system" in sent[key], (key, sent[key])
        assert RETRY_HINT in sent[key], key
    assert not os.path.exists(in_tmp)
    assert not (outside / "f").exists()
    assert not (places["home"] / "f").exists()
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert (work / ".git" / "config").read_text() == "[core]\n"
    assert not (work / ".oma" / "agents.json").exists()
    assert "Connection refused" in sent["net"]
    assert RETRY_HINT in sent["net"]
    assert server.connections == 0


async def test_read_only_writes_nowhere_but_reads(
    spawn_host: HostFactory, sim: Simulator, places: dict[str, Path]
) -> None:
    host = await spawned(spawn_host, places)
    work = places["work"]
    agent = await create(host, sim, work, permissionMode="auto", sandbox="read-only")
    sim.script(
        reply(
            shell("write", "echo x > made.txt"),
            shell("read", 'cat seen.txt && echo t > "$TMPDIR/t" && cat "$TMPDIR/t"'),
        ),
        Reply.text("done"),
    )
    await run(host, agent)
    assert asked(host) == []
    sent = results(sim)
    assert "Read-only file system" in sent["write"]
    assert not (work / "made.txt").exists()
    assert sent["read"] == "read me\nt\n[exit code 0]"


async def test_the_retry_outside_the_sandbox_asks_every_time_naming_the_command(
    spawn_host: HostFactory, sim: Simulator, places: dict[str, Path], server: Server
) -> None:
    host = await spawned(spawn_host, places)
    # The user answers "always": an unsandboxed command is asked about all the same.
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True, "scope": "session"}
    outside = places["outside"]
    agent = await create(host, sim, places["work"], permissionMode="auto")
    line = f"echo x >> {outside}/f && {connect(server.port)}"
    why = "it writes the shared folder and reaches the local server"
    sim.script(
        reply(shell("boxed", line)),
        reply(shell("out", line, unsandboxed=True, reason=why)),
        reply(shell("again", line, unsandboxed=True, reason=why)),
        reply(shell("noreason", line, unsandboxed=True)),
        Reply.text("done"),
    )
    await run(host, agent)
    assert RETRY_HINT in results(sim, 1)["boxed"]
    assert results(sim, 2)["out"] == "(no output)\n[exit code 0]"
    assert results(sim, 3)["again"] == "(no output)\n[exit code 0]"
    assert "unsandboxed: true needs a reason" in results(sim, 4)["noreason"]
    requests = asked(host)
    assert [request["title"] for request in requests] == [f"shell outside the sandbox: {line}"] * 3
    # The call without a reason is asked about too, then refused by the tool.
    assert [request["tool"]["input"].get("reason") for request in requests] == [why, why, None]
    for request in requests:
        assert request["optionKinds"] == ["allow_once", "reject_once"]
    decided = permissions(host)
    assert (decided["boxed"]["decision"], decided["boxed"]["by"]) == ("allow", "mode")
    assert [decided[key]["by"] for key in ("out", "again")] == ["client", "client"]
    assert decided["out"]["scope"] == "once"
    # Run outside: the write landed twice, and the host's server was reached twice.
    assert (outside / "f").read_text() == "x\nx\n"
    assert server.connections == 2


async def test_a_deny_rule_wins_over_auto_and_ask_mode_still_asks_in_the_sandbox(
    spawn_host: HostFactory, sim: Simulator, places: dict[str, Path]
) -> None:
    host = await spawned(spawn_host, places)
    work = places["work"]
    rules = [{"tool": "shell", "pattern": "rm *", "action": "deny"}]
    auto = await create(host, sim, work, permissionMode="auto", permissions=rules)
    sim.script(reply(shell("rm", "rm seen.txt")), Reply.text("done"))
    await run(host, auto)
    assert (permissions(host)["rm"]["decision"], permissions(host)["rm"]["by"]) == ("deny", "rule")
    assert (work / "seen.txt").exists()
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True}
    asking = await create(host, sim, work, sandbox="workspace-write")
    sim.script(reply(shell("w", f"echo x > {places['outside']}/f; echo y > mine")), "done")
    await run(host, asking, "t2")
    assert [request["title"] for request in asked(host)] == [
        f"shell echo x > {places['outside']}/f; echo y > mine"
    ]
    assert not (places["outside"] / "f").exists()
    assert (work / "mine").read_text() == "y\n"


async def test_without_bwrap_landlock_confines_and_a_protected_repository_asks(
    spawn_host: HostFactory, sim: Simulator, places: dict[str, Path], server: Server, tmp_path: Path
) -> None:
    if landlock.abi() < landlock.NET_ABI and not os.environ.get("CI"):
        pytest.skip("needs Landlock ABI 4 (Linux 6.7) or newer")
    empty = tmp_path / "bin"
    empty.mkdir()
    host = await spawned(spawn_host, places, PATH=str(empty))
    plain = tmp_path / "plain"
    plain.mkdir()
    outside = places["outside"]
    agent = await create(host, sim, plain, permissionMode="auto")
    assert await sandbox_state(host, agent) == {"mode": "workspace-write", "confinedBy": "landlock"}
    sim.script(
        reply(
            shell("in", "echo made > made.txt"),
            shell("out", f"echo x > {outside}/f"),
            shell("net", connect(server.port)),
        ),
        Reply.text("done"),
    )
    await run(host, agent)
    assert asked(host) == []
    sent = results(sim)
    assert (plain / "made.txt").read_text() == "made\n"
    assert "Permission denied" in sent["out"] and RETRY_HINT in sent["out"]
    assert not (outside / "f").exists()
    assert "Permission denied" in sent["net"]
    assert server.connections == 0
    # A repository's hooks cannot be kept read-only by Landlock: the command asks.
    repository = await create(host, sim, places["work"], permissionMode="auto")
    state = await sandbox_state(host, repository)
    assert state is not None and state["mode"] == "workspace-write"
    assert "bubblewrap is missing" in state["unavailable"]
    assert f"{places['work']}/.git/hooks" in state["unavailable"]
    sim.script(reply(shell("hook", "echo x > .git/hooks/pre-commit")), Reply.text("done"))
    await run(host, repository, "t2")
    (request,) = asked(host)
    assert request["title"] == "shell echo x > .git/hooks/pre-commit"
    assert "permission denied (the user said no)" in results(sim, 3)["hook"]
