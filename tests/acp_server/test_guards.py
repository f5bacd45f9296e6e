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


def test_fallback_cost_budget_and_loop_detection_on_the_acp_door(door: Door) -> None:
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
    _, _, fell_back, spent, looping = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("one")),
        prompt(text("two")),
        prompt(text("three")),
    )
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
