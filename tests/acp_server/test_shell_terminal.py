"""The ``shell`` tool behind the ACP door, driven by the TypeScript SDK's
client: an editor that advertises ``terminal`` runs the command in its own
terminal (the client serves ``terminal/*`` for real, spawning the process
itself) and the tool call embeds that terminal; past its time the command
is killed, a cancelled turn kills it too, and the terminal is always
released. Without the capability the host runs the command and streams its
output as ``tool_call_update`` content."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, text
from tests.builders import reply, tool_use
from tests.server.helpers import pid_alive

ALLOW = [{"tool": "shell", "action": "allow"}]


def _shell(command: str, **more: Any) -> dict[str, Any]:
    return tool_use("sh", "shell", command=command, **more)


def _setup(door: Door, command: str, permissions: Any = ALLOW, **more: Any) -> None:
    door.write_agents(first=door.llm(tools=["shell"], permissions=permissions))
    door.sim.script(reply(_shell(command, **more)), Reply.text("done"))


def _result_sent(door: Door) -> dict[str, Any]:
    (result,) = door.sim.requests[1].body["messages"][-1]["content"]
    assert result["tool_use_id"] == "sh"
    return dict(result)


def _call_updates(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("toolCallId") == "sh"]


def _methods(door: Door) -> list[str]:
    return [request["method"] for request in door.terminal_requests]


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_command_runs_in_the_editors_terminal_which_the_tool_call_embeds(door: Door) -> None:
    # The client's own environment holds the key; the host passes it empty.
    _setup(door, 'echo "key=[$ANTHROPIC_API_KEY]"; echo to-stderr >&2; exit 4')
    _, new, turn = door.run(
        initialize(terminal=True), new_session(door.cwd), prompt(text("run it"))
    )
    assert turn["result"]["stopReason"] == "end_turn"
    assert _methods(door) == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    created = door.terminal_requests[0]["params"]
    assert created["sessionId"] == new["result"]["sessionId"]
    assert created["command"] == "/bin/sh"
    assert created["args"] == ["-c", 'echo "key=[$ANTHROPIC_API_KEY]"; echo to-stderr >&2; exit 4']
    assert created["cwd"] == os.path.realpath(door.cwd)
    assert created["outputByteLimit"] == 120_000
    blanked = {pair["name"]: pair["value"] for pair in created["env"]}
    assert blanked["ANTHROPIC_API_KEY"] == "" and blanked["OPENAI_API_KEY"] == ""
    assert all(
        request["params"]["terminalId"] == "term-1" for request in door.terminal_requests[1:]
    )
    # What the model reads: the terminal's output and the exit code.
    result = _result_sent(door)
    assert result["content"] == "key=[]\nto-stderr\n[exit code 4: the command failed]"
    assert not result.get("is_error")
    # The editor shows the call in that terminal, from its start to its end.
    start, *updates = _call_updates(turn["updates"])
    assert (start["sessionUpdate"], start["kind"], start["rawInput"]["command"]) == (
        "tool_call",
        "execute",
        created["args"][1],
    )
    terminal = [{"type": "terminal", "terminalId": "term-1"}]
    assert [u["content"] for u in updates] == [terminal, terminal]
    assert updates[-1]["status"] == "completed"
    assert updates[-1]["rawOutput"] == result["content"]


# Secrets in the environment the editor and the host share, which the host's
# own shell withholds by name or by value: the editor's terminal must not
# hand them to the command either.
SHARED_SECRETS = {
    "HTTPS_PROXY": "http://user:proxy-pw@proxy.example:3128",
    "DATABASE_URL": "postgres://app:db-pw@db.example:5432/app",
    "LC_SMUGGLED": "x-sk-ant-test-key",  # the agent's key (the Door's ANTHROPIC_API_KEY)
    "MYSQL_PWD": "mysql-pw",
    "DB_CONN": "Server=db;User Id=app;Password=conn-pw;",
    "SESSION_COOKIE": "sid=cookie-value",
}


def test_the_terminal_gets_no_secret_the_hosts_own_shell_withholds(door: Door) -> None:
    door.env.update(SHARED_SECRETS, OLDPWD="/tmp/previous-test-dir")
    _setup(door, "env > seen.env; echo done")
    door.run(initialize(terminal=True), new_session(door.cwd), prompt(text("run it")))
    assert _methods(door)[0] == "terminal/create"
    blanked = {pair["name"]: pair["value"] for pair in door.terminal_requests[0]["params"]["env"]}
    assert {name: blanked.get(name) for name in SHARED_SECRETS} == dict.fromkeys(SHARED_SECRETS, "")
    seen = dict(
        line.split("=", 1)
        for line in (door.cwd / "seen.env").read_text().splitlines()
        if "=" in line
    )
    assert {name: seen[name] for name in SHARED_SECRETS} == dict.fromkeys(SHARED_SECRETS, "")
    # What is no secret keeps the editor's value.
    assert "PATH" not in blanked and "OLDPWD" not in blanked
    assert seen["OLDPWD"] == "/tmp/previous-test-dir"
    # The run's delegation limits reach the command, as a host-run one's do.
    assert blanked["OMA_HOST_DELEGATION"].startswith("depth=")
    assert seen["OMA_HOST_DELEGATION"] == blanked["OMA_HOST_DELEGATION"]


def test_a_command_past_its_time_is_killed_in_the_terminal_and_released(door: Door) -> None:
    _setup(door, "echo $$ > pid; echo started; sleep 300", timeoutMs=1000)
    door.run(initialize(terminal=True), new_session(door.cwd), prompt(text("run it")))
    assert _methods(door) == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/output",
        "terminal/release",
    ]
    result = _result_sent(door)
    assert result["is_error"] is True
    assert result["content"] == (
        "shell: timed out after 1 s: the command was killed in the editor's terminal. "
        "Its output until then:\nstarted\n"
    )
    assert _gone(int((door.cwd / "pid").read_text()))


def test_a_cancelled_turn_kills_and_releases_the_terminal(door: Door) -> None:
    _setup(door, "echo $$ > pid; sleep 300")
    cancelled = {**prompt(text("run it")), "cancelOnTerminal": True}
    _, _, turn = door.run(initialize(terminal=True), new_session(door.cwd), cancelled)
    assert turn["result"]["stopReason"] == "cancelled"
    assert _methods(door) == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ]
    assert _gone(int(Path(door.cwd / "pid").read_text()))
    assert len(door.sim.requests) == 1


def test_without_terminals_the_output_streams_as_tool_call_content(door: Door) -> None:
    _setup(door, "echo one; sleep 0.4; echo two")
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("run it")))
    assert door.terminal_requests == []
    _, *updates = _call_updates(turn["updates"])
    shown = [u["content"][0]["content"]["text"] for u in updates]
    # Each update carries the output so far (an update's content replaces the last).
    assert shown[0] == "one\n"
    assert shown[-2] == "one\ntwo\n"
    assert shown[-1] == "one\ntwo\n[exit code 0]"
    assert updates[-1]["status"] == "completed"
    assert all("status" not in u for u in updates[:-1])


def test_the_editor_is_asked_before_a_command_runs_and_a_refusal_runs_nothing(
    door: Door,
) -> None:
    _setup(door, "touch made", permissions=None)
    _, _, turn = door.run(
        initialize(terminal=True),
        new_session(door.cwd),
        prompt(text("run it")),
        permission="reject_once",
    )
    (asked,) = [u["permissionRequest"] for u in turn["updates"] if "permissionRequest" in u]
    assert asked["toolCall"]["toolCallId"] == "sh"
    assert (asked["toolCall"]["kind"], asked["toolCall"]["title"]) == (
        "execute",
        "shell touch made",
    )
    assert door.terminal_requests == []
    assert _result_sent(door)["content"] == "shell: permission denied (the user said no)"
    assert not (door.cwd / "made").exists()
