"""An LLM agent's run guards, over stdio against the provider simulator:
loop detection (``loopDetection``), fallback models (``fallbackModels``)
and the cost budget (``maxCostBudget``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.core.config import AgentConfig
from oma_host.core.cost import prices_of
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import (
    PROVIDERS,
    create_llm,
    llm_config,
    results_sent,
    text,
    without_cache_marks,
)
from tests.server.helpers import expect_error


def _grep(call_id: str, **tool_input: Any) -> dict[str, Any]:
    return tool_use(call_id, "grep", **tool_input)


def _models(sim: Simulator, start: int = 0) -> list[str]:
    """The model each request from ``start`` on asked for."""
    return [request.body["model"] for request in sim.requests[start:]]


# -- loop detection ------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_repeated_call_is_warned_once_then_ends_the_run(
    host: HostClient, sim: Simulator, provider: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("needle here\n")
    agent = await create_llm(host, sim, provider, tools=["grep"], cwd=str(tmp_path))
    # Equal JSON values: the key order does not matter.
    sim.script(
        reply(text("looking"), _grep("a", pattern="needle", path=".")),
        reply(_grep("b", path=".", pattern="needle")),
        reply(_grep("c", pattern="needle", path=".")),
        reply(_grep("d", path=".", pattern="needle")),
        Reply.text("never asked"),
    )
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "find it", "partialResultToken": "p"}
    )
    assert len(sim.requests) == 4
    assert result["success"] is False and result["status"]["code"] == "error"
    assert result["errorInfo"]["kind"] == "loop"
    assert "grep" in result["output"] and "4 times in a row" in result["output"]
    assert "maxRepeats=3" in result["output"]
    outputs = [call["output"] for call in result["toolCalls"]]
    assert outputs[:2] == ["notes.txt:1: needle here"] * 2, outputs
    # The third identical call was answered with the warning, not run.
    warning = outputs[2]
    assert warning.startswith("Not run:") and "3 times in a row" in warning
    assert "change your approach" in warning.lower()
    if provider == "anthropic":
        assert without_cache_marks(results_sent(sim, 3)) == [
            {"type": "tool_result", "tool_use_id": "c", "content": warning, "is_error": True}
        ]
    else:  # OpenAI's tool messages have no error flag: the host marks the text
        last = sim.requests[3].body["messages"][-1]
        assert last == {"role": "tool", "tool_call_id": "c", "content": f"[error] {warning}"}
    # The call that ended the run is answered too (an editor closes its tool call).
    assert outputs[3].startswith("Not run: the run ended.")
    events = host.progress("p")
    tool_results = [e["data"] for e in events if e["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in tool_results] == ["a", "b", "c", "d"]
    assert [r.get("is_error", False) for r in tool_results] == [False, False, True, True]
    assert events[-1] == {"type": "error", "data": {"message": result["output"], "kind": "loop"}}
    assert result["messages"][-1]["content"][0]["tool_use_id"] == "d"


async def test_identical_calls_in_one_turn_count_in_order(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("needle\n")
    agent = await create_llm(
        host, sim, "anthropic", tools=["grep"], cwd=str(tmp_path), loopDetection={"maxRepeats": 2}
    )
    same = {"pattern": "needle"}
    sim.script(
        reply(
            _grep("a", **same), _grep("b", **same), _grep("c", **same), _grep("d", pattern="other")
        ),
        Reply.text("never asked"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert len(sim.requests) == 1
    assert result["errorInfo"]["kind"] == "loop" and "maxRepeats=2" in result["output"]
    outputs = [call["output"] for call in result["toolCalls"]]
    assert outputs[0] == "notes.txt:1: needle"
    assert outputs[1].startswith("Not run: you have called grep with this same input 2 times")
    # The third ends the run; the different call after it is not run either.
    assert all(output.startswith("Not run: the run ended.") for output in outputs[2:])


async def test_loop_detection_off_and_calls_in_between_let_repeats_run(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("needle\n")
    same = _grep("s", pattern="needle")
    other = _grep("o", pattern="elsewhere")
    off = await create_llm(
        host, sim, "anthropic", tools=["grep"], cwd=str(tmp_path), loopDetection="off"
    )
    sim.script(*[reply(same)] * 5, Reply.text("done"))
    result = await host.request("agent/run", {"agentId": off, "input": "go"})
    assert result["success"] is True and result["output"] == "done"
    assert [call["output"] for call in result["toolCalls"]] == ["notes.txt:1: needle"] * 5
    # On by default: a different call between two streaks starts the count again.
    watched = await create_llm(host, sim, "anthropic", tools=["grep"], cwd=str(tmp_path))
    replies = [reply(call) for call in (same, same, other, same, same)]
    sim.script(*replies, Reply.text("done"))
    result = await host.request("agent/run", {"agentId": watched, "input": "go"})
    assert result["success"] is True, result
    assert not any(call["output"].startswith("Not run") for call in result["toolCalls"])


async def test_a_bad_loop_detection_is_refused_saying_what_it_takes(host: HostClient) -> None:
    for value, expected in (
        ("on", 'config.loopDetection must be "off" or an object {maxRepeats?: int >= 2}'),
        ({"maxRepeats": 1}, "config.loopDetection.maxRepeats: Input should be greater than"),
        ({"maxRepeat": 3}, "did you mean maxRepeats?"),
    ):
        config = {"name": "x", "provider": "anthropic", "model": "m", "loopDetection": value}
        error = await expect_error(
            host.request("agent/create", {"config": config}), -32602, "InvalidParams"
        )
        assert expected in error.message, error.message


# -- fallback models ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "status"),
    [("anthropic", 529), ("anthropic", 429), ("anthropic", 503), ("openai", 503)],
)
async def test_a_failing_model_falls_back_for_that_turn_only(
    host: HostClient, sim: Simulator, provider: str, status: int, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("needle\n")
    agent = await create_llm(
        host,
        sim,
        provider,
        tools=["grep"],
        cwd=str(tmp_path),
        fallbackModels=["sim-2", "sim-3"],
    )
    # retry-after 0: the shared client's two retries happen at once.
    busy = Fault(status, "the model is busy", retry_after=0)
    sim.script(
        busy,
        busy,
        busy,
        reply(text("from sim-2"), _grep("g", pattern="needle")),
        Reply.text("sim-1 again"),
    )
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "f"}
    )
    assert result["success"] is True and result["output"] == "sim-1 again"
    # Three tries of the model (one and two retries), the fallback, and the
    # next turn back on the agent's own model.
    assert _models(sim) == ["sim-1", "sim-1", "sim-1", "sim-2", "sim-1"]
    assert result["model"] == "sim-1"
    fallbacks = [e["data"] for e in host.progress("f") if e["type"] == "model_fallback"]
    assert len(fallbacks) == 1
    assert fallbacks[0] == {**fallbacks[0], "failed": "sim-1", "model": "sim-2", "status": status}
    assert "the model is busy" in fallbacks[0]["message"]
    # A run whose last reply came from a fallback model names it.
    start = len(sim.requests)
    sim.script(busy, busy, busy, busy, busy, busy, Reply.text("from sim-3"))
    result = await host.request("agent/run", {"agentId": agent, "input": "again"})
    assert result["output"] == "from sim-3" and result["model"] == "sim-3"
    assert _models(sim, start) == ["sim-1"] * 3 + ["sim-2"] * 3 + ["sim-3"]


async def test_an_overload_inside_a_stream_falls_back_until_the_reply_has_begun(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic", fallbackModels=["sim-2"])
    busy = Fault(529, "Overloaded")
    # Anthropic's error event right after message_start: nothing reached the client.
    sim.script(Reply.text("lost", stream_error=busy), Reply.text("from sim-2"))
    params = {"agentId": agent, "input": "go", "partialResultToken": "s1"}
    result = await host.request("agent/stream", params)
    assert result["output"] == "from sim-2" and result["model"] == "sim-2"
    assert _models(sim) == ["sim-1", "sim-2"]
    fallback = next(e["data"] for e in host.progress("s1") if e["type"] == "model_fallback")
    assert fallback == {
        "failed": "sim-1",
        "model": "sim-2",
        "status": 529,
        "message": "anthropic: Overloaded (overloaded_error)",
    }
    # Once text has reached the client, another model cannot finish the reply.
    start = len(sim.requests)
    cut = Reply.text("the start of a reply", chunk_size=4, stream_error=busy, stream_error_after=4)
    sim.script(cut, Reply.text("never asked"))
    params = {"agentId": agent, "input": "go", "partialResultToken": "s2"}
    result = await host.request("agent/stream", params)
    assert _models(sim, start) == ["sim-1"]
    assert result["success"] is False and result["errorInfo"]["kind"] == "provider"
    assert "Overloaded" in result["output"] and "HTTP 529" in result["output"]
    events = host.progress("s2")
    assert next(e["data"] for e in events if e["type"] == "text") == "the "
    assert not any(e["type"] == "model_fallback" for e in events)


async def test_faults_other_models_cannot_help_do_not_fall_back(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic", fallbackModels=["sim-2"])
    sim.script(Fault(400, "prompt is malformed"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is False and "prompt is malformed" in result["output"]
    assert "model" not in result  # no model answered
    sim.script(Fault(401, "invalid x-api-key", error_type="authentication_error"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["errorInfo"]["kind"] == "auth"
    assert _models(sim) == ["sim-1", "sim-1"]
    # Every model failing: the last one's fault is the run's.
    start = len(sim.requests)
    sim.script(
        *[Fault(503, "down", retry_after=0)] * 3, *[Fault(529, "busy too", retry_after=0)] * 3
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert _models(sim, start) == ["sim-1"] * 3 + ["sim-2"] * 3
    assert result["success"] is False and "busy too" in result["output"]
    assert "HTTP 529" in result["output"]


# -- the cost budget ------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_cost_budget_ends_the_run_once_spent(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    # $1000 per million tokens both ways: each 10 + 5 token reply costs $0.015.
    pricing = {"input": 1000, "output": 1000}
    config = llm_config(sim, provider, pricing=pricing, maxCostBudget=0.02, tools=["glob"])
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    call = tool_use("g", "glob", pattern="*")
    other = tool_use("h", "glob", pattern="*.md")
    sim.script(reply(call), reply(text("more"), other))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert len(sim.requests) == 2
    assert result["success"] is False and result["budgetExceeded"] is True
    assert result["status"]["code"] == "budget_exhausted"
    assert result["errorInfo"]["kind"] == "budget"
    assert "maxCostBudget=0.02 USD reached: 0.03 USD spent" in result["status"]["message"]
    assert result["cost"] == {"amount": pytest.approx(0.03), "currency": "USD"}
    assert result["output"] == "more"
    # oma/runAgent reports the spent budget with its cost.
    sim.script(reply(call), reply(other))
    result = await host.request("oma/runAgent", {"config": config, "input": "go", "progress": True})
    assert result["errorInfo"]["kind"] == "budget"
    exceeded = [
        n["params"]["data"]
        for n in host.notifications
        if n["method"] == "oma/progress" and n["params"]["type"] == "budget_exceeded"
    ]
    assert exceeded == [{"tokenUsage": result["tokenUsage"], "cost": result["cost"]}]


async def test_fallback_replies_cost_their_own_models_prices(
    host: HostClient, sim: Simulator
) -> None:
    fields: dict[str, Any] = {"model": "claude-sonnet-4-5", "fallbackModels": ["claude-haiku-4-5"]}
    agent = await create_llm(host, sim, "anthropic", maxCostBudget=5, **fields)
    usage = {"input_tokens": 1000, "output_tokens": 100}
    busy = Fault(529, "overloaded", retry_after=0)
    sim.script(
        busy, busy, busy, Reply.text("haiku", usage=usage), Reply.text("sonnet", usage=usage)
    )
    fell_back = await host.request("agent/run", {"agentId": agent, "input": "a"})
    own = await host.request("agent/run", {"agentId": agent, "input": "b"})
    assert (fell_back["model"], own["model"]) == ("claude-haiku-4-5", "claude-sonnet-4-5")
    config = AgentConfig(name="x", provider="anthropic", **fields)
    for result, model in ((fell_back, "claude-haiku-4-5"), (own, "claude-sonnet-4-5")):
        prices = prices_of(config, model)
        assert prices is not None
        expected = prices.cost({"input_tokens": 1000, "output_tokens": 100})
        assert result["cost"]["amount"] == pytest.approx(expected)
    assert fell_back["cost"]["amount"] < own["cost"]["amount"]
    state = await host.request("agent/state", {"agentId": agent})
    total = fell_back["cost"]["amount"] + own["cost"]["amount"]
    assert state["cost"]["amount"] == pytest.approx(total)


async def test_a_cost_budget_on_a_model_without_a_price_is_refused(
    host: HostClient, sim: Simulator
) -> None:
    config = llm_config(sim, "anthropic", maxCostBudget=1)  # model sim-1: in no table
    error = await expect_error(
        host.request("agent/create", {"config": config}), -32602, "InvalidParams"
    )
    assert "config.maxCostBudget" in error.message and "'sim-1'" in error.message
    assert "config.pricing" in error.message
    priced = llm_config(
        sim, "anthropic", model="claude-sonnet-4-5", maxCostBudget=1, fallbackModels=["sim-9"]
    )
    error = await expect_error(
        host.request("agent/create", {"config": priced}), -32602, "InvalidParams"
    )
    assert "'sim-9' (in fallbackModels)" in error.message
    # pricing prices every model the agent uses.
    priced["pricing"] = {"input": 1, "output": 2}
    assert (await host.request("agent/create", {"config": priced}))["agentId"]
    for bad in (0, -1, "1"):
        config = llm_config(sim, "anthropic", maxCostBudget=bad, pricing={"input": 1, "output": 1})
        await expect_error(
            host.request("agent/create", {"config": config}), -32602, "InvalidParams"
        )
    assert sim.requests == []
