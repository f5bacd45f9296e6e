"""``agent/rewind`` through the real host and the provider simulator: a stored
session of three turns that write files (``file_write``) and run a command
that writes two more is rewound to its first turn; the workspace is put back
as it was then (the command's files removed), a file the user edited after
the last turn is left as the user left it and named, the provider's next
request carries only the first turn, and a new host loads the rewound
session. Bad input is refused and changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Simulator
from tests.builders import THREE_TURNS_ASKED, reply, three_turns_replies, tool_use
from tests.providers.conftest import ANTHROPIC_KEY
from tests.providers.helpers import llm_config
from tests.server.helpers import HostFactory, expect_error

ALLOW = [{"tool": "file_write", "action": "allow"}, {"tool": "shell", "action": "allow"}]
SESSION = "rewind-session"


async def _host(spawn_host: HostFactory, state: Path) -> HostClient:
    """A host keeping its sessions (and their checkpoints) in ``state``."""
    return await spawn_host(
        host_argv("--state-dir", str(state)), env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    )


def _config(sim: Simulator, cwd: Path) -> dict[str, Any]:
    return llm_config(
        sim, "anthropic", tools=["file_write", "shell"], cwd=str(cwd), permissions=ALLOW
    )


async def _agent(host: HostClient, sim: Simulator, cwd: Path) -> str:
    created = await host.request(
        "agent/create", {"config": _config(sim, cwd), "sessionId": SESSION}
    )
    agent_id: str = created["agentId"]
    return agent_id


async def _prompt(host: HostClient, agent: str, said: str) -> None:
    result = await host.request("agent/prompt", {"agentId": agent, "input": said})
    assert result["success"] is True, result


def _texts(request_body: dict[str, Any]) -> list[str]:
    """The user text of each message an Anthropic request carried, in order."""
    return [
        block["text"]
        for message in request_body["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block.get("type") == "text"
    ]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "notes.txt").write_text("as the user wrote it\n")
    (cwd / ".gitignore").write_text("build/\n")
    (cwd / "build").mkdir()
    (cwd / "build" / "cache.bin").write_text("ignored: never recorded, never touched\n")
    return cwd


async def _three_turns(host: HostClient, sim: Simulator, cwd: Path) -> str:
    """Turn 1 writes one.txt; turn 2 rewrites notes.txt and writes two.txt;
    turn 3 runs a command that writes made/c.txt and d.txt."""
    sim.script(*three_turns_replies())
    agent = await _agent(host, sim, cwd)
    for said in THREE_TURNS_ASKED:
        await _prompt(host, agent, said)
    assert (cwd / "made" / "c.txt").read_text() == "c\n" and (cwd / "d.txt").exists()
    return agent


async def test_rewinding_to_the_first_turn_restores_its_files_and_its_history(
    sim: Simulator, spawn_host: HostFactory, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    host = await _host(spawn_host, state)
    agent = await _three_turns(host, sim, workspace)
    (workspace / "two.txt").write_text("the user's own edit\n")  # after the last turn

    answer = await host.request(
        "agent/rewind", {"agentId": agent, "keepTurns": 1, "restoreFiles": True}
    )

    # Turn 1 was a request, a tool call, its result and a reply.
    assert answer["keptTurns"] == 1 and answer["removedTurns"] == 2
    assert answer["messages"] == 4
    assert answer["files"] == {
        "restored": [str(workspace / "notes.txt")],
        "removed": [str(workspace / "d.txt"), str(workspace / "made" / "c.txt")],
        "leftAlone": [str(workspace / "two.txt")],
        "notRecorded": [],
    }
    assert (workspace / "notes.txt").read_text() == "as the user wrote it\n"
    assert (workspace / "one.txt").read_text() == "first turn\n"  # the kept turn's file
    assert not (workspace / "d.txt").exists() and not (workspace / "made").exists()
    assert (workspace / "two.txt").read_text() == "the user's own edit\n"
    assert (workspace / "build" / "cache.bin").exists()
    # The user's .git was never the checkpoints'; they are in the state directory.
    assert not (workspace / ".git").exists()
    assert (state / "checkpoints" / f"{SESSION}.git").is_dir()

    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert len(history) == 4 and history[0]["content"][0]["text"] == "write one"

    # The provider's next request carries the first turn only, then the new prompt.
    sim.script(reply("fresh answer"))
    before = len(sim.requests)
    await _prompt(host, agent, "try again")
    (request,) = sim.requests[before:]
    assert _texts(request.body) == ["write one", "try again"]
    await host.close()

    # A new host on the same state directory loads the rewound session.
    second = await _host(spawn_host, state)
    again = await _agent(second, sim, workspace)
    loaded = (await second.request("agent/history", {"agentId": again}))["messages"]
    assert len(loaded) == 6
    assert [m["content"][0].get("text") for m in loaded if m["role"] == "user"][::2] == [
        "write one",
        "try again",
    ]


async def test_the_conversation_alone_is_rewound_without_restore_files(
    sim: Simulator, spawn_host: HostFactory, tmp_path: Path, workspace: Path
) -> None:
    host = await _host(spawn_host, tmp_path / "state")
    agent = await _three_turns(host, sim, workspace)
    answer = await host.request("agent/rewind", {"agentId": agent, "keepTurns": 2})
    assert answer == {"keptTurns": 2, "removedTurns": 1, "messages": 8}
    assert (workspace / "d.txt").exists()  # the files are as they were
    # The checkpoints stay with the turns kept: turn 2's can still be restored.
    answer = await host.request(
        "agent/rewind", {"agentId": agent, "keepTurns": 1, "restoreFiles": True}
    )
    assert answer["files"]["restored"] == [str(workspace / "notes.txt")]
    assert str(workspace / "d.txt") in answer["files"]["removed"]
    assert not (workspace / "two.txt").exists()


async def test_bad_input_is_refused_naming_it_and_changes_nothing(
    sim: Simulator, spawn_host: HostFactory, tmp_path: Path, workspace: Path
) -> None:
    host = await _host(spawn_host, tmp_path / "state")
    agent = await _three_turns(host, sim, workspace)
    negative = await expect_error(
        host.request("agent/rewind", {"agentId": agent, "keepTurns": -1}), -32602, "InvalidParams"
    )
    assert "keepTurns" in str(negative)
    beyond = await expect_error(
        host.request("agent/rewind", {"agentId": agent, "keepTurns": 3, "restoreFiles": True}),
        -32602,
        "InvalidParams",
    )
    assert "keepTurns: 3 cuts no turn: the history holds 3 turn(s); keep 0 to 2" in str(beyond)
    await expect_error(
        host.request("agent/rewind", {"agentId": agent, "keepTurns": "1"}), -32602, "InvalidParams"
    )
    unknown = await expect_error(
        host.request("agent/rewind", {"agentId": "agent-99", "keepTurns": 0}),
        -32001,
        "AgentNotFound",
    )
    assert "agent-99" in str(unknown)
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert len(history) == 12 and (workspace / "d.txt").exists()


async def test_an_agent_without_a_session_rewinds_its_conversation_but_has_no_checkpoints(
    sim: Simulator, spawn_host: HostFactory, tmp_path: Path, workspace: Path
) -> None:
    host = await _host(spawn_host, tmp_path / "state")
    sim.script(reply("one"), reply("two"))
    created = await host.request("agent/create", {"config": _config(sim, workspace)})
    agent = created["agentId"]
    await _prompt(host, agent, "first")
    await _prompt(host, agent, "second")
    refused = await expect_error(
        host.request("agent/rewind", {"agentId": agent, "keepTurns": 1, "restoreFiles": True}),
        -32602,
        "InvalidParams",
    )
    assert "restoreFiles: turn 2 has no checkpoint" in str(refused)
    answer = await host.request("agent/rewind", {"agentId": agent, "keepTurns": 0})
    assert answer == {"keptTurns": 0, "removedTurns": 2, "messages": 0}


async def test_a_file_over_the_size_bound_is_not_recorded_and_the_rewind_says_so(
    sim: Simulator, spawn_host: HostFactory, tmp_path: Path, workspace: Path
) -> None:
    big = workspace / "big.bin"
    big.write_bytes(b"\0" * (5 * 1024 * 1024))  # over the 4 MiB a checkpoint records
    sim.script(
        reply(
            tool_use(
                "s1", "shell", command="echo more >> big.bin && head -c 5000000 big.bin > huge.bin"
            )
        ),
        reply("grew big.bin, made huge.bin"),
    )
    host = await _host(spawn_host, tmp_path / "state")
    agent = await _agent(host, sim, workspace)
    await _prompt(host, agent, "grow it")
    answer = await host.request(
        "agent/rewind", {"agentId": agent, "keepTurns": 0, "restoreFiles": True}
    )
    # big.bin could not be put back: it is named, and left as it is; huge.bin,
    # created by the turn (and too large to record too), is removed.
    assert answer["files"] == {
        "restored": [],
        "removed": [str(workspace / "huge.bin")],
        "leftAlone": [],
        "notRecorded": [str(big)],
    }
    assert big.stat().st_size == 5 * 1024 * 1024 + len("more\n")
    assert not (workspace / "huge.bin").exists()
