"""The ACP door's pickers and usage, driven by the official TypeScript SDK's
client against the real ``oma-host acp`` and the provider simulator: the
``model``, ``mode`` and ``thought_level`` config options (and
``session/set_mode``) change what the provider receives and which tools run
without asking; ``usage_update`` carries each model's context window and the
session's cost."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host.core.provider_facts import facts_of
from oma_host.testing.simulator import Fault, Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, step, text
from tests.builders import reply, tool_use

WRITE = tool_use("w", "file_write", path="a.txt")
WRITE["input"]["content"] = "written\n"


def _options(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {option["id"]: option for option in answer["result"]["configOptions"]}


def _set(option: str, value: str) -> dict[str, Any]:
    return step("session/set_config_option", sessionId="$session", configId=option, value=value)


def _updates(answer: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [u for u in answer["updates"] if u.get("sessionUpdate") == kind]


def test_an_llm_agent_offers_agent_model_mode_and_thought_level(door: Door) -> None:
    door.sim.models = ["claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5"]
    door.write_agents(door.llm("other"), first=door.llm(model="claude-sonnet-4-5", models=None))
    _, new = door.run(initialize(), new_session(door.cwd))
    options = _options(new)
    assert {o: options[o]["category"] for o in options} == {
        "agent": "_agent",  # custom: ACP reserves categories without a leading _
        "model": "model",
        "mode": "mode",
        "sandbox": "_sandbox",
        "thought_level": "thought_level",
    }
    assert [v["value"] for v in options["agent"]["options"]] == ["claude", "other"]
    # The provider's own list, the agent's model first.
    assert [v["value"] for v in options["model"]["options"]] == door.sim.models
    assert options["model"]["currentValue"] == "claude-sonnet-4-5"
    every_mode = ["ask", "accept-edits", "auto", "read-only"]
    assert [v["value"] for v in options["mode"]["options"]] == every_mode
    assert options["mode"]["currentValue"] == "ask"
    assert options["thought_level"]["currentValue"] == "off"
    modes = new["result"]["modes"]
    assert modes["currentModeId"] == "ask"
    assert [m["id"] for m in modes["availableModes"]] == every_mode


def test_a_model_that_cannot_think_has_no_thought_level_and_a_process_agent_no_modes(
    door: Door,
) -> None:
    process = {"name": "proc", "backend": {"kind": "process", "command": "cat"}}
    door.write_agents(process, first=door.llm(model="claude-3-5-haiku"))
    _, new, switched, set_mode = door.run(
        initialize(),
        new_session(door.cwd),
        _set("agent", "proc"),
        step("session/set_mode", sessionId="$session", modeId="read-only"),
    )
    assert set(_options(new)) == {"agent", "model", "mode", "sandbox"}
    assert [v["value"] for v in _options(new)["model"]["options"]] == ["claude-3-5-haiku"]
    assert set(_options(switched)) == {"agent"}
    assert set_mode["error"]["code"] == -32602
    assert "'proc' has no modes" in set_mode["error"]["message"]


def test_the_model_and_thought_level_pickers_change_the_request(door: Door) -> None:
    door.sim.models = ["claude-sonnet-4-5", "claude-opus-4-5"]
    door.write_agents(first=door.llm(model="claude-sonnet-4-5", models=None))
    door.sim.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    _, _, first, model_set, level_set, second, off, third = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("one")),
        _set("model", "claude-opus-4-5"),
        _set("thought_level", "high"),
        prompt(text("two")),
        _set("thought_level", "off"),
        prompt(text("three")),
    )
    bodies = [request.body for request in door.sim.requests if request.method == "POST"]
    assert [body["model"] for body in bodies] == ["claude-sonnet-4-5", *["claude-opus-4-5"] * 2]
    assert "thinking" not in bodies[0] and "thinking" not in bodies[2]
    assert bodies[1]["thinking"]["type"] in ("enabled", "adaptive")
    # Each switch is announced, and the answer holds the options after it.
    (announced,) = _updates(model_set, "config_option_update")
    current = {o["id"]: o["currentValue"] for o in announced["configOptions"]}
    assert current["model"] == "claude-opus-4-5"
    assert _options(level_set)["thought_level"]["currentValue"] == "high"
    assert all(t["result"]["stopReason"] == "end_turn" for t in (first, second, third))
    assert _options(off)["thought_level"]["currentValue"] == "off"
    assert len(bodies[2]["messages"]) == 5  # the history went on through the switches


def test_without_the_providers_list_the_picker_offers_the_models_its_table_knows(
    door: Door,
) -> None:
    """The simulator refuses the model list: the picker offers the agent's
    model, then Anthropic's current models from the table (no retired one),
    and a model picked from them is the one the next request asks for."""
    door.write_agents(first=door.llm(model="claude-sonnet-4-5", models=None))
    door.sim.script(Fault(404, "no model list here"), Reply.text("one"))
    _, new, _, turn = door.run(
        initialize(), new_session(door.cwd), _set("model", "claude-opus-5-5"), prompt(text("hi"))
    )
    gets = [request.path for request in door.sim.requests if request.method == "GET"]
    assert gets == ["/v1/models?limit=1000"]  # asked, and refused
    offered = [v["value"] for v in _options(new)["model"]["options"]]
    assert offered[0] == "claude-sonnet-4-5"
    assert {"claude-sonnet-5-5", "claude-opus-5-5", "claude-haiku-5-5", "claude-fable-5-2"} <= set(
        offered
    )
    assert "claude-3-5-sonnet" not in offered and "claude-opus-4-1" not in offered  # retired
    assert len(offered) == len(set(offered)) > 10
    assert turn["result"]["stopReason"] == "end_turn"
    (post,) = [request for request in door.sim.requests if request.method == "POST"]
    assert post.body["model"] == "claude-opus-5-5"


def test_an_openai_compatible_server_without_a_list_offers_its_agents_model_alone(
    door: Door,
) -> None:
    """OpenAI's table names OpenAI's models, not a compatible server's."""
    door.env = {**door.env, "OPENAI_API_KEY": "sk-test"}
    door.write_agents(first=door.llm(provider="openai", model="llava", models=None))
    door.sim.script(Fault(404, "no model list here"))
    _, new = door.run(initialize(), new_session(door.cwd))
    assert [v["value"] for v in _options(new)["model"]["options"]] == ["llava"]
    assert "gpt-6.2-sol" in facts_of("openai").models.offered()  # which OpenAI's own would get


def _prompt_a_write(door: Door, *mode_steps: dict[str, Any]) -> dict[str, Any]:
    """One turn whose model writes a.txt, after ``mode_steps``; the turn."""
    door.write_agents(first=door.llm(tools=["file_read", "file_write"]))
    door.sim.script(reply(WRITE), Reply.text("done"))
    answers = door.run(
        initialize(),
        new_session(door.cwd),
        *mode_steps,
        prompt(text("write it")),
        permission="allow_once",
    )
    return answers[-1]


def test_auto_mode_runs_a_sandboxed_command_unasked_and_the_sandbox_is_stored(
    door: Door,
) -> None:
    """The editor's terminal cannot be confined: a sandboxed command runs in
    the host, writes in the session's cwd and nowhere else, unasked."""
    outside = door.cwd.parent / "outside-of-the-session"
    outside.mkdir()
    door.write_agents(first=door.llm(tools=["shell"]))
    line = f"echo in > made.txt; echo out > {outside}/f"
    door.sim.script(reply(tool_use("s", "shell", command=line)), Reply.text("done"))
    _, new, sandboxed, mode, turn = door.run(
        initialize(terminal=True),
        new_session(door.cwd),
        _set("sandbox", "read-only"),
        _set("mode", "auto"),
        prompt(text("run it")),
    )
    sandbox = _options(new)["sandbox"]
    assert sandbox["currentValue"] == "off"
    assert [v["value"] for v in sandbox["options"]] == ["off", "workspace-write", "read-only"]
    assert "bubblewrap" in sandbox["description"] or "Landlock" in sandbox["description"]
    assert _options(sandboxed)["sandbox"]["currentValue"] == "read-only"
    assert "Commands write nowhere but a temp folder" in _options(mode)["sandbox"]["description"]
    assert not [u for u in turn["updates"] if "permissionRequest" in u]
    assert door.terminal_requests == []  # the editor offers one; the host ran it
    content = door.sim.requests[-1].body["messages"][-1]["content"]
    (result,) = [block for block in content if block["type"] == "tool_result"]
    assert "Read-only file system" in result["content"]
    assert not (door.cwd / "made.txt").exists()
    assert not (outside / "f").exists()
    session_id = new["result"]["sessionId"]
    _, resumed = door.run(
        initialize(),
        step("session/resume", sessionId=session_id, cwd=str(door.cwd), mcpServers=[]),
    )
    current = {o["id"]: o["currentValue"] for o in resumed["result"]["configOptions"]}
    assert (current["mode"], current["sandbox"]) == ("auto", "read-only")


def _write_result(door: Door) -> dict[str, Any]:
    content = door.sim.requests[-1].body["messages"][-1]["content"]
    (result,) = [block for block in content if block["type"] == "tool_result"]
    return result


def test_ask_mode_asks_the_editor_before_a_write(door: Door) -> None:
    turn = _prompt_a_write(door)
    assert [u for u in turn["updates"] if "permissionRequest" in u]
    assert (door.cwd / "a.txt").read_text() == "written\n"


def test_accept_edits_writes_without_asking(door: Door) -> None:
    turn = _prompt_a_write(door, _set("mode", "accept-edits"))
    assert not [u for u in turn["updates"] if "permissionRequest" in u]
    assert not _write_result(door).get("is_error")
    assert (door.cwd / "a.txt").read_text() == "written\n"


def test_read_only_refuses_a_write_unasked_and_tells_the_model(door: Door) -> None:
    set_mode = step("session/set_mode", sessionId="$session", modeId="read-only")
    turn = _prompt_a_write(door, set_mode)
    assert not [u for u in turn["updates"] if "permissionRequest" in u]
    result = _write_result(door)
    assert result["is_error"] is True
    assert "read-only" in result["content"]
    assert not (door.cwd / "a.txt").exists()
    posted = [request.body for request in door.sim.requests if request.method == "POST"]
    assert "This session is read-only" in posted[0]["system"][0]["text"]


def test_set_mode_announces_the_mode_and_is_stored_with_the_session(door: Door) -> None:
    door.write_agents(first=door.llm(tools=["file_read", "file_write"]))
    _, new, set_mode = door.run(
        initialize(),
        new_session(door.cwd),
        step("session/set_mode", sessionId="$session", modeId="accept-edits"),
    )
    assert set_mode["result"] == {}
    (mode,) = _updates(set_mode, "current_mode_update")
    assert mode["currentModeId"] == "accept-edits"
    (options,) = _updates(set_mode, "config_option_update")
    assert {o["id"]: o["currentValue"] for o in options["configOptions"]}["mode"] == "accept-edits"
    session_id = new["result"]["sessionId"]
    _, resumed = door.run(
        initialize(),
        step("session/resume", sessionId=session_id, cwd=str(door.cwd), mcpServers=[]),
    )
    assert resumed["result"]["modes"]["currentModeId"] == "accept-edits"


@pytest.mark.parametrize(
    ("provider", "model", "window", "prices"),
    [
        ("anthropic", "claude-sonnet-4-5", 200_000, (3.0, 15.0)),
        ("anthropic", "claude-sonnet-5-5", 1_000_000, (2.0, 10.0)),
        ("openai", "gpt-4o", 128_000, (2.5, 10.0)),
        ("openai", "gpt-6.2-sol", 1_050_000, (2.0, 10.0)),
        ("gemini", "gemini-2.5-flash", 1_048_576, (0.3, 2.5)),
        ("gemini", "gemini-3.8-flash", 1_048_576, (0.75, 3.75)),
    ],
)
def test_usage_update_carries_the_models_window_and_the_sessions_cost(
    door: Door, provider: str, model: str, window: int, prices: tuple[float, float]
) -> None:
    door.env = {**door.env, "OPENAI_API_KEY": "sk-test", "GEMINI_API_KEY": "gm-test"}
    door.write_agents(first=door.llm(provider=provider, model=model))
    usage = {"input_tokens": 1000, "output_tokens": 200}
    door.sim.script(Reply.text("a", usage=usage), Reply.text("b", usage=usage))
    _, _, first, second = door.run(
        initialize(), new_session(door.cwd), prompt(text("one")), prompt(text("two"))
    )
    turn_cost = (1000 * prices[0] + 200 * prices[1]) / 1e6
    sizes, costs = [], []
    for turn in (first, second):
        (update,) = _updates(turn, "usage_update")
        sizes.append(update["size"])
        costs.append(update["cost"])
    assert sizes == [window, window]
    assert costs[0] == {"amount": pytest.approx(turn_cost), "currency": "USD"}
    assert costs[1] == {"amount": pytest.approx(2 * turn_cost), "currency": "USD"}


def test_context_window_and_pricing_override_the_table(door: Door) -> None:
    pricing = {"input": 1.0, "output": 2.0, "cacheRead": 0.5, "cacheWrite": 4.0}
    door.write_agents(
        first=door.llm(model="claude-sonnet-4-5", contextWindow=64_000, pricing=pricing)
    )
    usage = {
        "input_tokens": 100,
        "output_tokens": 10,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": 50,
    }
    door.sim.script(Reply.text("a", usage=usage))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("one")))
    (update,) = _updates(turn, "usage_update")
    assert update["size"] == 64_000
    assert update["used"] == 1160
    expected = (100 * 1.0 + 10 * 2.0 + 1000 * 0.5 + 50 * 4.0) / 1e6
    assert update["cost"]["amount"] == pytest.approx(expected)


def test_an_unknown_model_has_no_cost(door: Door) -> None:
    door.sim.script(Reply.text("a"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("one")))
    (update,) = _updates(turn, "usage_update")
    assert "cost" not in update
    assert update["size"] == 200_000  # the nominal size, for a model no table knows
