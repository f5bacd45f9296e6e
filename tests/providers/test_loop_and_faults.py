"""The agent loop (streaming order, tools, budgets, timeouts, outputSchema)
and every injected provider fault, over stdio against the simulator."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import (
    OPENAI_FAMILY,
    PROVIDERS,
    create_llm,
    llm_config,
    system_text,
    text,
    without_cache_marks,
)
from tests.server.helpers import wait_for_progress


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_streaming_relays_text_reasoning_tool_use_and_tool_result_in_order(
    host: HostClient, sim: Simulator, provider: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    agent = await create_llm(host, sim, provider, tools=["file_read"], cwd=str(tmp_path))
    first: list[dict[str, Any]] = [
        text("Let me read it."),
        tool_use("call_1", "file_read", path="notes.txt"),
    ]
    if provider == "anthropic":
        first.insert(
            0, {"type": "reasoning", "text": "I should read the file.", "signature": "sig-1"}
        )
    sim.script(Reply(content=first), Reply.text("It says 42."))
    result = await host.request(
        "agent/stream",
        {"agentId": agent, "input": "What do the notes say?", "partialResultToken": "t"},
    )
    assert result["success"] is True and result["output"] == "It says 42."
    kinds = [event["type"] for event in host.progress("t")]
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
    # The policy's decision (file_read: allowed by default) comes between the
    # tool call and its result.
    expected = ["text", "tool_use", "permission", "tool_result", "text"]
    assert collapsed == (["reasoning", *expected] if provider == "anthropic" else expected)
    events = host.progress("t")
    permission = next(e["data"] for e in events if e["type"] == "permission")
    assert permission == {
        **permission,
        "toolUseId": "call_1",
        "tool": "file_read",
        "action": "allow",
        "decision": "allow",
        "by": "default",
    }
    called = next(e["data"] for e in events if e["type"] == "tool_use")
    assert called == first[-1]
    tool_result = next(e["data"] for e in events if e["type"] == "tool_result")
    assert tool_result == {
        "type": "tool_result",
        "tool_use_id": "call_1",
        "content": "the answer is 42\n",
    }
    assert [call["toolName"] for call in result["toolCalls"]] == ["file_read"]
    assert result["toolCalls"][0]["output"] == "the answer is 42\n"
    assert result["tokenUsage"] == {"input_tokens": 20, "output_tokens": 10}
    # The second request carried the tool result back to the model.
    assert len(sim.requests) == 2
    if provider == "anthropic":
        last = without_cache_marks(sim.requests[1].body["messages"][-1])
        assert last == {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "the answer is 42\n"}
            ],
        }
        thinking = sim.requests[1].body["messages"][1]["content"][0]
        assert thinking == {
            "type": "thinking",
            "thinking": "I should read the file.",
            "signature": "sig-1",
        }
    else:
        last = sim.requests[1].body["messages"][-1]
        assert last == {"role": "tool", "tool_call_id": "call_1", "content": "the answer is 42\n"}
    # messages: assistant (tool call), user (tool result), assistant (answer).
    assert [m["role"] for m in result["messages"]] == ["assistant", "user", "assistant"]


async def test_tools_are_confined_to_cwd_and_unknown_tools_come_back_as_errors(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    inside = tmp_path / "work"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    (inside / "link").symlink_to(tmp_path / "secret.txt")
    agent = await create_llm(host, sim, "anthropic", tools=["file_read", "glob"], cwd=str(inside))
    calls = [
        tool_use("a", "file_read", path="../secret.txt"),
        tool_use("b", "file_read", path="link"),
        tool_use("c", "file_read", path=str(tmp_path / "secret.txt")),
        tool_use("d", "shell", cmd="rm -rf /"),
        tool_use("e", "glob", pattern="../*"),
    ]
    sim.script(Reply(content=calls), Reply.text("done"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True
    results = sim.requests[1].body["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True] * 5
    assert "unknown tool 'shell'" in results[3]["content"]
    for refused in (0, 1, 2, 4):
        assert "outside the agent's working directory" in results[refused]["content"]
    assert all(call["output"] != "outside" for call in result["toolCalls"])


async def test_unknown_tool_names_in_config_are_invalid_params(
    host: HostClient, sim: Simulator
) -> None:
    config = {
        "name": "x",
        "provider": "anthropic",
        "model": "m",
        "baseURL": sim.base_url,
        "tools": ["bash"],
    }
    with pytest.raises(Exception, match="unknown tool 'bash'"):
        await host.request("agent/create", {"config": config})


@pytest.mark.parametrize("provider", [*PROVIDERS, *OPENAI_FAMILY])
async def test_max_token_budget_stops_the_loop(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    agent = await create_llm(host, sim, provider, maxTokenBudget=100, tools=["glob"])
    loop_call = tool_use("g", "glob", pattern="*")
    sim.script(
        Reply(content=[loop_call], usage={"input_tokens": 60, "output_tokens": 10}),
        Reply(content=[text("more")], usage={"input_tokens": 70, "output_tokens": 10}),
    )
    result = await host.request(
        "oma/runAgent",
        {
            "config": llm_config(sim, provider, maxTokenBudget=100, tools=["glob"]),
            "input": "go",
            "progress": True,
        },
    )
    assert result["success"] is False
    assert result["status"]["code"] == "budget_exhausted" and result["budgetExceeded"] is True
    assert result["tokenUsage"] == {"input_tokens": 130, "output_tokens": 20}
    kinds = [n["params"]["type"] for n in host.notifications if n["method"] == "oma/progress"]
    assert kinds == ["agent_start", "budget_exceeded", "agent_complete"]
    del agent


async def test_max_turns_stops_a_model_that_keeps_calling_tools(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic", maxTurns=2, tools=["glob"])
    call = tool_use("g", "glob", pattern="*")
    sim.script(reply(call), reply(text("again"), call), Reply.text("never asked"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert len(sim.requests) == 2
    assert result["status"] == {"code": "ok", "message": "stopped at maxTurns=2"}
    assert result["output"] == "again"


@pytest.mark.parametrize("provider", [*PROVIDERS, *OPENAI_FAMILY])
async def test_timeout_aborts_a_slow_provider_and_the_host_keeps_serving(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    # The first provider request also loads the HTTP client, which under load can
    # take longer than 400 ms: warm it up so that the slow reply is what gets timed.
    warm = await create_llm(host, sim, provider)
    assert (await host.request("agent/run", {"agentId": warm, "input": "x"}))["success"]
    agent = await create_llm(host, sim, provider, timeoutMs=400)
    sim.script(Reply.text("too late", first_byte_delay_s=3), Reply.text("on time"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["status"]["code"] == "timeout"
    assert result["aborted"] is True
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["output"] == "on time"


@pytest.mark.parametrize("provider", [*PROVIDERS, *OPENAI_FAMILY])
async def test_cancel_closes_the_http_stream_at_once(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    agent = await create_llm(host, sim, provider)
    sim.script(Reply.text("x" * 400, chunk_size=4, event_delay_s=0.05))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "long", "partialResultToken": "c"}
    )
    await wait_for_progress(host, "c", 3)
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 5)
    partial = response["error"]["data"]["partial"]
    assert response["error"]["code"] == -32800
    assert partial["output"] and set(partial["output"]) == {"x"}
    assert len(partial["output"]) < 400


@pytest.mark.parametrize("provider", [*PROVIDERS, *OPENAI_FAMILY])
@pytest.mark.parametrize("streaming", [False, True])
async def test_every_injected_fault_ends_in_a_clear_result(
    host: HostClient, sim: Simulator, provider: str, streaming: bool
) -> None:
    agent = await create_llm(host, sim, provider)

    async def run() -> dict[str, Any]:
        if streaming:
            params = {"agentId": agent, "input": "x", "partialResultToken": "f"}
            result: dict[str, Any] = await host.request("agent/stream", params)
        else:
            result = await host.request("agent/run", {"agentId": agent, "input": "x"})
        return result

    sim.script(Fault(429, "slow down", retry_after=0.3), Reply.text("after 429"))
    assert (await run())["output"] == "after 429"
    sim.script(Fault(500, "boom"), Fault(503, "busy"), Reply.text("third time"))
    assert (await run())["output"] == "third time"
    before = len(sim.requests)
    sim.script(Fault(500, "down"), Fault(500, "down"), Fault(500, "still down"))
    result = await run()
    assert result["success"] is False and "still down" in result["status"]["message"]
    assert "500" in result["status"]["message"]
    assert len(sim.requests) - before == 3  # one try and two retries
    sim.script(Fault(404, "no such model"))
    result = await run()
    assert "no such model" in result["output"] and len(sim.requests) - before == 4
    sim.script(Reply.text("abcdefghijklmnopqrstuvwxyz", malformed=True))
    result = await run()
    assert result["success"] is False and result["errorInfo"]["kind"] == "malformed"
    if streaming:
        sim.script(Reply.text("cut me off in the middle please", chunk_size=3, cut_after_events=4))
        result = await run()
        assert result["success"] is False and result["errorInfo"]["kind"] == "stream"
        assert "cut" in result["status"]["message"]
    sim.script(Reply.text("still serving"))
    assert (await run())["output"] == "still serving"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_missing_key_is_a_failed_result_not_a_crash(sim: Simulator, provider: str) -> None:
    client = await HostClient.spawn(env={"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": ""})
    await client.initialize()
    config = {"name": "k", "provider": provider, "model": "m", "apiKeyEnv": "OMA_TEST_NO_SUCH_KEY"}
    agent = (await client.request("agent/create", {"config": config}))["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "auth"
    assert "OMA_TEST_NO_SUCH_KEY" in result["output"]
    assert sim.requests == []
    assert await client.close() == 0


async def test_a_block_the_adapter_cannot_represent_fails_before_sending(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "openai")
    conversation = [
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "hmm", "signature": "s"}]},
        {"role": "user", "content": [{"type": "video", "url": "x"}]},
    ]
    result = await host.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is False and result["errorInfo"]["kind"] == "unsupported_block"
    assert "messages[1].content[0]" in result["output"] and "reasoning" in result["output"]
    agent = await create_llm(host, sim, "anthropic")
    result = await host.request(
        "agent/run",
        {"agentId": agent, "input": [{"role": "user", "content": [{"type": "video", "url": "x"}]}]},
    )
    assert result["success"] is False and "'video'" in result["output"]
    assert sim.requests == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_output_schema_parses_validates_and_repairs_once(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    agent = await create_llm(host, sim, provider, outputSchema=schema)
    sim.script(Reply.text('{"n": "seven"}'), Reply.text('```json\n{"n": 7}\n```'))
    result = await host.request("agent/run", {"agentId": agent, "input": "count"})
    assert result["success"] is True and result["structured"] == {"n": 7}
    repair = sim.requests[1].body["messages"][-1]
    repair_text = repair["content"][0]["text"]
    assert "n" in repair_text and "JSON Schema" in repair_text
    system = system_text(provider, sim.requests[0].body)
    assert '"required": ["n"]' in system
    sim.script(Reply.text("not json"), Reply.text('{"n": 1.5}'))
    result = await host.request("agent/run", {"agentId": agent, "input": "count"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "output_schema"
    assert "structured" not in result


@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_an_auth_failure(
    host: HostClient, sim: Simulator, status: int
) -> None:
    agent = await create_llm(host, sim, "anthropic")
    sim.script(Fault(status, "invalid x-api-key", error_type="authentication_error"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "auth", result
    assert "invalid x-api-key" in result["output"] and f"HTTP {status}" in result["output"]


async def test_an_unreachable_default_port_is_named(host: HostClient) -> None:
    # No port in the URL: the message names the one the scheme implies.
    config = {"name": "a", "provider": "anthropic", "model": "m", "baseURL": "https://127.0.0.1"}
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["errorInfo"]["kind"] == "connection", result
    assert "could not reach 127.0.0.1:443:" in result["output"], result
