"""What a delegate's run adds to its caller's spending
(:func:`oma_host.llm.delegation.count_spending`), with real core agents as
the delegates: the tokens always, the cost as the delegate's result gives
it, unknown for an LLM delegate that spent tokens without a known price,
nothing for a process agent. The whole path, budgets included, is tested
through the real host in tests/llm/test_delegate_tool.py."""

from __future__ import annotations

import pytest

from oma_host.core.agent import Agent
from oma_host.core.recorder import RunRecorder
from oma_host.core.results import AgentRunResult, TokenUsage, make_result
from oma_host.llm.delegation import count_spending

LLM = Agent({"name": "helper", "provider": "anthropic", "model": "sim-1"})
PROCESS = Agent({"name": "tests", "backend": {"kind": "process", "command": "make"}})


def _caller() -> RunRecorder:
    """A caller's run after one reply of $0.0001."""
    recorder = RunRecorder("r")
    recorder.add_token_usage({"input_tokens": 100, "output_tokens": 10})
    recorder.add_cost(0.0001)
    return recorder


def _result(input_tokens: int, output_tokens: int, cost: float | None) -> AgentRunResult:
    usage: TokenUsage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    result = make_result("r:d", usage=usage)
    if cost is not None:
        result["cost"] = {"amount": cost, "currency": "USD"}
    return result


def test_a_priced_delegates_tokens_and_cost_are_the_callers() -> None:
    recorder = _caller()
    count_spending(recorder, LLM, _result(1000, 500, 0.25))
    assert recorder.usage == {"input_tokens": 1100, "output_tokens": 510}
    assert recorder.cost == pytest.approx(0.2501) and recorder.cost_known


def test_an_llm_delegate_without_a_cost_makes_the_callers_unknown() -> None:
    recorder = _caller()
    count_spending(recorder, LLM, _result(7, 7, None))
    assert recorder.usage == {"input_tokens": 107, "output_tokens": 17}
    assert recorder.cost_known is False


def test_an_llm_delegate_that_spent_nothing_costs_nothing() -> None:
    recorder = _caller()
    count_spending(recorder, LLM, _result(0, 0, None))  # failed before any reply
    assert recorder.cost == pytest.approx(0.0001) and recorder.cost_known


def test_a_process_delegate_adds_its_tokens_and_no_cost() -> None:
    recorder = _caller()
    count_spending(recorder, PROCESS, _result(3, 4, None))
    assert recorder.usage == {"input_tokens": 103, "output_tokens": 14}
    assert recorder.cost == pytest.approx(0.0001) and recorder.cost_known
