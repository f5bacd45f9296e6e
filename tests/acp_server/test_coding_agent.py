"""The ACP door's LLM agents are coding agents unless their config says
otherwise: the ``full`` preset plus ``update_plan`` when no tools are
granted, and a system prompt naming where they work and carrying the
project's ``AGENTS.md``; grants and ``environment`` in the agents file are
kept as written. Driven through the real ``oma-host acp`` by the TypeScript
SDK's client and by acpx, the model being the provider simulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, step, text
from tests.builders import reply, tool_use

# open-multi-agent's full preset (its ``bash`` is ``shell`` here), then update_plan.
CODING_TOOLS = ["file_read", "grep", "glob", "file_write", "file_edit", "shell", "update_plan"]


def _offered(door: Door, request: int = 0) -> list[str]:
    return [tool["name"] for tool in door.sim.requests[request].body.get("tools", [])]


def _system(door: Door, request: int = 0) -> str:
    system = door.sim.requests[request].body.get("system")
    if system is None:
        return ""
    return system if isinstance(system, str) else "".join(block["text"] for block in system)


def _one_turn(door: Door, *before: dict[str, Any]) -> dict[str, Any]:
    door.sim.script(Reply.text("ok"))
    *_, turn = door.run(initialize(), new_session(door.cwd), *before, prompt(text("hello")))
    assert turn["result"]["stopReason"] == "end_turn", turn
    return turn


def test_an_agent_without_a_grant_is_a_coding_agent(door: Door) -> None:
    (door.cwd / "AGENTS.md").write_text("Run `make check` before you say a change is done.\n")
    door.sim.script(Reply.text("one"), Reply.text("two"))
    *_, first, second = door.run(
        initialize(), new_session(door.cwd), prompt(text("hello")), prompt(text("again"))
    )
    assert [first["result"]["stopReason"], second["result"]["stopReason"]] == ["end_turn"] * 2
    assert _offered(door) == CODING_TOOLS
    system = _system(door)
    assert _system(door, 1) == system  # the same on every request (prompt caching)
    assert f"Working directory: {door.cwd.resolve()}" in system
    assert "Run `make check` before you say a change is done." in system
    assert "Permission mode: ask." in system


def test_the_default_agent_without_an_agents_file_is_a_coding_agent(
    door: Door, tmp_path: Path
) -> None:
    """What a user who installs from the registry gets: no agents file, a key,
    and (here) the provider's base URL pointing at the simulator."""
    config_home = tmp_path / "config"  # holds no agents.json
    config_home.mkdir()
    door.use_agents_file = False
    door.env.update(
        {
            "XDG_CONFIG_HOME": str(config_home),
            "ANTHROPIC_API_KEY": "sk-ant-default-agent",
            "ANTHROPIC_BASE_URL": door.sim.base_url,
        }
    )
    (door.cwd / "AGENTS.md").write_text("Answer like a pirate.\n")
    door.sim.script(Reply.text("Arr"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("hello")))
    assert turn["result"]["stopReason"] == "end_turn", turn
    turns = [r for r in door.sim.requests if r.method == "POST"]
    assert [tool["name"] for tool in turns[0].body["tools"]] == CODING_TOOLS
    system = "".join(block["text"] for block in turns[0].body["system"])
    assert f"Working directory: {door.cwd.resolve()}" in system
    assert "Answer like a pirate." in system


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"toolPreset": "readonly"}, ["file_read", "grep", "glob"]),
        ({"tools": ["grep"]}, ["grep"]),
        ({"tools": []}, []),  # a grant of nothing is a grant
        # disallowedTools alone grants nothing: the coding tools, less those.
        (
            {"disallowedTools": ["shell", "file_write"]},
            ["file_read", "grep", "glob", "file_edit", "update_plan"],
        ),
    ],
)
def test_the_agents_file_grants_are_kept(
    door: Door, fields: dict[str, Any], expected: list[str]
) -> None:
    door.write_agents(first=door.llm(**fields))
    _one_turn(door)
    assert _offered(door) == expected


def test_environment_false_leaves_the_system_prompt_the_agents_own(door: Door) -> None:
    (door.cwd / "AGENTS.md").write_text("Not sent.\n")
    door.write_agents(first=door.llm(environment=False, systemPrompt="Be brief."))
    _one_turn(door)
    assert _system(door) == "Be brief."
    assert _offered(door) == CODING_TOOLS


def test_the_agents_own_prompt_follows_and_the_mode_is_the_sessions(door: Door) -> None:
    door.write_agents(first=door.llm(systemPrompt="Be brief."))
    _one_turn(door, step("session/set_mode", sessionId="$session", modeId="read-only"))
    system = _system(door)
    assert "Permission mode: read-only." in system
    own = system.index("Be brief.")
    assert system.index("Working directory:") < own < system.index("This session is read-only")


def test_acpx_exec_summarize_readme_reads_it_with_file_read(door: Door) -> None:
    (door.cwd / "README.md").write_text("# Widget\n\nWidget turns sprockets into gears.\n")
    door.sim.script(
        reply(tool_use("read-1", "file_read", path="README.md")),
        Reply.text("Widget turns sprockets into gears."),
    )
    done = door.acpx("--format", "quiet", "exec", "summarize README.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Widget turns sprockets into gears."
    assert "file_read" in _offered(door)
    (result,) = [
        block
        for block in door.sim.requests[1].body["messages"][-1]["content"]
        if block["type"] == "tool_result"
    ]
    assert result["tool_use_id"] == "read-1"
    assert not result.get("is_error")
    assert "Widget turns sprockets into gears." in str(result["content"])
