"""Anthropic's thinking and prompt caching, over stdio against the
simulator: how ``thinking`` maps for each model generation, the
``cache_control`` marks (on unless ``promptCaching: false``), and the cache
counts in ``tokenUsage``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, text, tool_use
from tests.providers.helpers import create_llm

EPHEMERAL = {"type": "ephemeral"}


async def test_caching_marks_the_system_prompt_the_last_tool_and_the_conversation(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    agent = await create_llm(
        host,
        sim,
        "anthropic",
        systemPrompt="Be terse.",
        tools=["file_read", "glob"],
        cwd=str(tmp_path),
    )
    call = tool_use("t1", "file_read", path="a.txt")
    sim.script(reply(text("reading"), call), Reply.text("alpha it is"))
    result = await host.request("agent/run", {"agentId": agent, "input": "read a.txt"})
    assert result["success"] is True, result
    for request in sim.requests:
        body = request.body
        assert body["system"] == [{"type": "text", "text": "Be terse.", "cache_control": EPHEMERAL}]
        assert [tool.get("cache_control") for tool in body["tools"]] == [None, EPHEMERAL]
        marked = [
            (m, b)
            for m, message in enumerate(body["messages"])
            for b, block in enumerate(message["content"])
            if "cache_control" in block
        ]
        # One mark: the last block of the request, the prefix the next turn reads.
        last = len(body["messages"]) - 1
        assert marked == [(last, len(body["messages"][last]["content"]) - 1)]
    assert sim.requests[1].body["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "alpha", "cache_control": EPHEMERAL}
    ]
    # The library's own messages carry no marks.
    assert "cache_control" not in repr(result["messages"])


async def test_prompt_caching_false_sends_no_marks(host: HostClient, sim: Simulator) -> None:
    agent = await create_llm(host, sim, "anthropic", systemPrompt="Be terse.", promptCaching=False)
    assert (await host.request("agent/run", {"agentId": agent, "input": "hi"}))["success"]
    body = sim.requests[-1].body
    assert body["system"] == "Be terse." and "cache_control" not in repr(body)


@pytest.mark.parametrize("streaming", [False, True])
async def test_cache_counts_are_reported_and_summed_over_turns(
    host: HostClient, sim: Simulator, streaming: bool, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    agent = await create_llm(host, sim, "anthropic", tools=["file_read"], cwd=str(tmp_path))
    first = {
        "input_tokens": 5,
        "output_tokens": 7,
        "cache_creation_input_tokens": 1500,
        "cache_read_input_tokens": 0,
    }
    second = {
        "input_tokens": 9,
        "output_tokens": 3,
        "cache_creation_input_tokens": 40,
        "cache_read_input_tokens": 1500,
    }
    call = tool_use("t1", "file_read", path="a.txt")
    sim.script(Reply(content=[call], usage=first), Reply.text("done", usage=second))
    method = "agent/stream" if streaming else "agent/run"
    params: dict[str, Any] = {"agentId": agent, "input": "go"}
    if streaming:
        params["partialResultToken"] = "p"
    result = await host.request(method, params)
    assert result["tokenUsage"] == {
        "input_tokens": 14,
        "output_tokens": 10,
        "cache_creation_input_tokens": 1540,
        "cache_read_input_tokens": 1500,
    }
    state = await host.request("agent/state", {"agentId": agent})
    assert state["tokenUsage"]["cache_read_input_tokens"] == 1500


@pytest.mark.parametrize(
    ("model", "thinking", "max_tokens", "fields", "sent_max"),
    [
        # Before 4.6: a budget, from the effort when none is given, under max_tokens.
        (
            "claude-sonnet-4-5-20250929",
            {"effort": "high"},
            None,
            {"thinking": {"type": "enabled", "budget_tokens": 24576}},
            24576 + 4096,
        ),
        (
            "claude-3-7-sonnet-20250219",
            {},
            20000,
            {"thinking": {"type": "enabled", "budget_tokens": 8192}},
            20000,
        ),
        (
            "claude-opus-4-20250514",
            {"budgetTokens": 100},
            None,
            {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            1024 + 4096,
        ),
        # 4.6: adaptive with the effort, or the budget when one is given.
        (
            "claude-opus-4-6",
            {"effort": "medium"},
            None,
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}},
            4096,
        ),
        (
            "claude-sonnet-4-6",
            {"budgetTokens": 3000},
            8000,
            {"thinking": {"type": "enabled", "budget_tokens": 3000}},
            8000,
        ),
        # 4.7 and later, and ids with no version: adaptive only.
        (
            "claude-opus-4-7",
            {"budgetTokens": 3000, "effort": "low"},
            None,
            {"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}},
            4096,
        ),
        ("claude-mythos-preview", {}, None, {"thinking": {"type": "adaptive"}}, 4096),
    ],
)
async def test_thinking_maps_to_each_model_generation(
    host: HostClient,
    sim: Simulator,
    model: str,
    thinking: dict[str, Any],
    max_tokens: int | None,
    fields: dict[str, Any],
    sent_max: int,
) -> None:
    extra: dict[str, Any] = {"model": model, "thinking": thinking}
    if max_tokens is not None:
        extra["maxTokens"] = max_tokens
    agent = await create_llm(host, sim, "anthropic", **extra)
    sim.script(reply({"type": "reasoning", "text": "so", "signature": "s1"}, text("ok")))
    result = await host.request("agent/run", {"agentId": agent, "input": "hi"})
    assert result["success"] is True, result
    body = sim.requests[-1].body
    assert {key: body[key] for key in ("thinking", "output_config") if key in body} == fields
    assert body["max_tokens"] == sent_max
    assert result["messages"][0]["content"][0] == {
        "type": "reasoning",
        "text": "so",
        "signature": "s1",
    }


async def test_a_max_tokens_under_the_budget_is_named_before_sending(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(
        host,
        sim,
        "anthropic",
        model="claude-sonnet-4-5",
        maxTokens=2000,
        thinking={"budgetTokens": 4000},
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "hi"})
    assert result["success"] is False
    assert "maxTokens (2000) must be above the thinking budget (4000 tokens)" in result["output"]
    assert sim.requests == []


async def test_thinking_fields_are_checked_at_create(host: HostClient, sim: Simulator) -> None:
    for bad, where in (
        ({"effort": "extreme"}, "config.thinking.effort"),
        ({"budgetTokens": 0}, "config.thinking.budgetTokens"),
        ({"budget": 10}, "config.thinking"),
    ):
        with pytest.raises(Exception, match=where.replace(".", r"\.")):
            await create_llm(host, sim, "anthropic", thinking=bad)
    with pytest.raises(Exception, match="promptCaching"):
        await create_llm(host, sim, "anthropic", promptCaching="yes")


@pytest.mark.parametrize("streaming", [False, True])
async def test_openai_chat_completions_takes_the_effort_as_reasoning_effort(
    host: HostClient, sim: Simulator, streaming: bool
) -> None:
    agent = await create_llm(host, sim, "openai", thinking={"effort": "high", "budgetTokens": 900})
    method = "agent/stream" if streaming else "agent/run"
    params: dict[str, Any] = {"agentId": agent, "input": "hi"}
    if streaming:
        params["partialResultToken"] = "o"
    assert (await host.request(method, params))["success"] is True
    body = sim.requests[-1].body
    assert sim.requests[-1].path.endswith("/chat/completions")
    assert body["reasoning_effort"] == "high"  # Chat Completions has no budget form
    assert "budget" not in repr(body)
