"""An LLM agent's run guards on the ACP door, driven by the official
TypeScript SDK's client against the real ``oma-host acp`` and the provider
simulator: a turn that falls back to another model, a cost budget ending a
turn with ``max_tokens``, and loop detection failing one."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host.testing.simulator import Fault, Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, text
from tests.builders import reply, tool_use


def _glob(call_id: str) -> dict[str, Any]:
    return tool_use(call_id, "glob", pattern="*")


def _three_guarded_turns(door: Door, **capabilities: Any) -> list[dict[str, Any]]:
    """A turn that falls back to model-two, one a cost budget ends and one
    loop detection fails, for a client of ``capabilities``; their steps."""
    # $1000 per million tokens both ways: each 10 + 5 token reply costs $0.015.
    door.write_agents(
        first=door.llm(
            tools=["glob"],
            fallbackModels=["model-two"],
            pricing={"input": 1000, "output": 1000},
            maxCostBudget=0.02,
            loopDetection={"maxRepeats": 2},
        )
    )
    busy = Fault(529, "overloaded", retry_after=0)
    door.sim.script(busy, busy, busy, Reply.text("from model two"))
    door.sim.script(reply(_glob("a")), reply(_glob("b")))
    door.sim.script(reply(_glob("c"), _glob("d"), _glob("e")))
    steps = door.run(
        initialize(**capabilities),
        new_session(door.cwd),
        prompt(text("one")),
        prompt(text("two")),
        prompt(text("three")),
    )
    return steps[2:]


def test_fallback_cost_budget_and_loop_detection_on_the_acp_door(door: Door) -> None:
    fell_back, spent, looping = _three_guarded_turns(door)
    models = [request.body["model"] for request in door.sim.requests]
    assert models == ["model-one"] * 3 + ["model-two"] + ["model-one"] * 3
    assert fell_back["result"]["stopReason"] == "end_turn"
    assert reply_text(fell_back["updates"]) == "from model two"
    # The second reply of the turn brought the run's cost to $0.03.
    assert spent["result"]["stopReason"] == "max_tokens"
    (usage,) = [u for u in spent["updates"] if u.get("sessionUpdate") == "usage_update"]
    assert usage["cost"]["amount"] == pytest.approx(0.015 + 0.03)
    # The first call ran, the second was warned, the third ended the turn.
    assert looping["error"]["data"]["kind"] == "loop"
    assert "maxRepeats=2" in looping["error"]["message"]
    statuses = [
        (u["toolCallId"], u["status"])
        for u in looping["updates"]
        if u.get("sessionUpdate") == "tool_call_update"
    ]
    assert statuses == [("c", "completed"), ("d", "failed"), ("e", "failed")]


def _notices(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(u["severity"], u["title"]) for u in updates if u.get("sessionUpdate") == "notice"]


def test_a_client_that_takes_notices_is_told_of_the_fallback_and_the_stops(door: Door) -> None:
    """The same three turns for a client advertising ``session.notices``:
    each guard that acted is a notice, in the turn it acted in."""
    fell_back, spent, looping = _three_guarded_turns(door, session={"notices": {}})
    assert _notices(fell_back["updates"]) == [
        ("warning", "model-one failed; model-two answers this turn")
    ]
    (fallback,) = [u for u in fell_back["updates"] if u.get("sessionUpdate") == "notice"]
    assert fallback["description"].startswith("HTTP 529: ")
    assert _notices(spent["updates"]) == [("warning", "The turn stopped at its budget")]
    assert spent["result"]["stopReason"] == "max_tokens"
    assert _notices(looping["updates"]) == [
        ("error", "The turn was stopped: the agent was repeating itself")
    ]
    assert looping["error"]["data"]["kind"] == "loop"


def test_a_client_without_the_capability_gets_no_notice(door: Door) -> None:
    door.write_agents(first=door.llm(fallbackModels=["model-two"]))
    busy = Fault(529, "overloaded", retry_after=0)
    door.sim.script(busy, busy, busy, Reply.text("from model two"))
    _, _, fell_back = door.run(initialize(), new_session(door.cwd), prompt(text("one")))
    assert reply_text(fell_back["updates"]) == "from model two"
    assert _notices(fell_back["updates"]) == []
