"""The OpenAI family over stdio against the simulator: the Responses API
(input items for every block, reasoning carried between turns, streaming,
usage with cached and reasoning tokens), Azure OpenAI's v1 endpoint (its
endpoint, key and token, deployments as models), Chat Completions'
``max_completion_tokens`` rule and Gemini's thought signatures on its
compatible endpoint. Faults, timeouts, cancellation and budgets of these
wires are in test_loop_and_faults.py (parametrised over OPENAI_FAMILY)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.core.config import AgentConfig
from oma_host.providers.azure import v1_base_url
from oma_host.providers.openai_target import openai_target
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.conftest import AZURE_KEY, OPENAI_KEY
from tests.providers.helpers import PNG, create_llm, image, text

RESPONSES_WIRES = ["openai-responses", "azure"]
FILE_READ = tool_use("call_1", "file_read", path="n.txt")


def _run_params(agent: str, value: Any, streaming: bool) -> tuple[str, dict[str, Any]]:
    if streaming:
        return "agent/stream", {"agentId": agent, "input": value, "partialResultToken": "s"}
    return "agent/run", {"agentId": agent, "input": value}


@pytest.mark.parametrize("wire", RESPONSES_WIRES)
async def test_responses_request_maps_text_image_system_prompt_limits_and_tools(
    host: HostClient, sim: Simulator, wire: str, tmp_path: Path
) -> None:
    agent = await create_llm(
        host,
        sim,
        wire,
        systemPrompt="Be brief.",
        maxTokens=321,
        temperature=0.5,
        tools=["file_read"],
        cwd=str(tmp_path),
    )
    conversation = [{"role": "user", "content": [text("What is this?"), image()]}]
    result = await host.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is True, result
    assert "text 'What is this?', image image/png" in result["output"]
    request = sim.requests[0]
    expected_path = "/v1/responses" if wire == "openai-responses" else "/openai/v1/responses"
    assert request.path == expected_path
    body = request.body
    assert body["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is this?"},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{PNG}",
                    "detail": "auto",
                },
            ],
        }
    ]
    assert body["instructions"] == "Be brief."
    assert body["max_output_tokens"] == 321 and "max_tokens" not in body
    assert body["temperature"] == 0.5
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"summary": "auto"}
    assert body["model"] == ("sim-1" if wire == "openai-responses" else "sim-deployment")
    [tool] = body["tools"]
    assert tool["type"] == "function" and tool["name"] == "file_read"
    assert tool["parameters"]["type"] == "object"
    if wire == "azure":
        assert request.headers["api-key"] == AZURE_KEY and "authorization" not in request.headers
    else:
        assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"


@pytest.mark.parametrize("wire", RESPONSES_WIRES)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_tool_loop_carries_reasoning_calls_and_results_back(
    host: HostClient, sim: Simulator, wire: str, streaming: bool, tmp_path: Path
) -> None:
    (tmp_path / "n.txt").write_text("the answer is 42\n")
    agent = await create_llm(host, sim, wire, tools=["file_read"], cwd=str(tmp_path))
    first = [
        {"type": "reasoning", "text": "I should read the file."},
        text("Let me read it."),
        FILE_READ,
    ]
    sim.script(Reply(content=first), Reply.text("It says 42."))
    method, params = _run_params(agent, "What do the notes say?", streaming)
    result = await host.request(method, params)
    assert result["success"] is True and result["output"] == "It says 42.", result
    reasoning, said, call = result["messages"][0]["content"]
    assert reasoning == {
        "type": "reasoning",
        "text": "I should read the file.",
        "providerMetadata": {
            "openai": {"itemId": "rs_sim_1_0", "encryptedContent": "enc:I should read the file."}
        },
    }
    assert said == text("Let me read it.")
    assert call == {**FILE_READ, "providerMetadata": {"openai": {"itemId": "fc_sim_1_2"}}}
    assert result["messages"][1]["content"][0]["content"] == "the answer is 42\n"
    if streaming:
        kinds = [e["type"] for e in host.progress("s") if e["type"] != "permission"]
        collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
        assert collapsed == ["reasoning", "text", "tool_use", "tool_result", "text"]
        deltas = [e["data"] for e in host.progress("s") if e["type"] == "reasoning"]
        assert "".join(deltas) == "I should read the file."
    # The second request carried the reasoning item, the call and its output back.
    assert sim.requests[1].body["input"][1:] == [
        {
            "type": "reasoning",
            "id": "rs_sim_1_0",
            "summary": [{"type": "summary_text", "text": "I should read the file."}],
            "encrypted_content": "enc:I should read the file.",
        },
        {"role": "assistant", "content": "Let me read it."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "file_read",
            "arguments": '{"path": "n.txt"}',
            "id": "fc_sim_1_2",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "the answer is 42\n"},
    ]


async def test_reasoning_from_openai_is_sent_back_on_the_next_prompt_turn(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "openai-responses")
    metadata = {"openai": {"itemId": "rs_abc", "encryptedContent": "gAAAA-opaque"}}
    sim.script(
        reply({"type": "reasoning", "text": "", "providerMetadata": metadata}, text("1")),
        Reply.text("2"),
    )
    assert (await host.request("agent/prompt", {"agentId": agent, "input": "one"}))["success"]
    assert (await host.request("agent/prompt", {"agentId": agent, "input": "two"}))["success"]
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert history[1]["content"][0] == {
        "type": "reasoning",
        "text": "",
        "providerMetadata": metadata,
    }
    assert sim.requests[1].body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "one"}]},
        {"type": "reasoning", "id": "rs_abc", "summary": [], "encrypted_content": "gAAAA-opaque"},
        {"role": "assistant", "content": "1"},
        {"role": "user", "content": [{"type": "input_text", "text": "two"}]},
    ]


@pytest.mark.parametrize("wire", ["openai", *RESPONSES_WIRES])
@pytest.mark.parametrize("streaming", [False, True])
async def test_usage_reports_cached_and_reasoning_tokens(
    host: HostClient, sim: Simulator, wire: str, streaming: bool
) -> None:
    agent = await create_llm(host, sim, wire)
    usage = {
        "input_tokens": 12,
        "output_tokens": 30,
        "cache_read_input_tokens": 1024,
        "reasoning_tokens": 20,
    }
    sim.script(Reply(content=[text("cached")], usage=usage), Reply.text("plain"))
    method, params = _run_params(agent, "x", streaming)
    result = await host.request(method, params)
    # OpenAI counts the cached tokens inside the input tokens; tokenUsage keeps them apart.
    assert result["tokenUsage"] == usage
    result = await host.request(method, params)
    assert result["tokenUsage"] == {"input_tokens": 10, "output_tokens": 5}


async def test_a_model_that_refuses_reasoning_parameters_is_asked_again_without_them(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "openai-responses")
    sim.script(
        Fault(400, "Encrypted content is not supported with this model."),
        Reply.text("fine"),
        Reply.text("still fine"),
    )
    assert (await host.request("agent/run", {"agentId": agent, "input": "x"}))["output"] == "fine"
    second = await host.request(
        "agent/stream", {"agentId": agent, "input": "y", "partialResultToken": "r"}
    )
    assert second["output"] == "still fine"
    asked = ["include" in request.body for request in sim.requests]
    assert asked == [True, False, False]
    assert all("reasoning" not in request.body for request in sim.requests[1:])
    # A model of a family that does not reason is never asked.
    plain = await create_llm(host, sim, "openai-responses", model="gpt-4.1-mini")
    assert (await host.request("agent/run", {"agentId": plain, "input": "x"}))["success"]
    assert "include" not in sim.requests[-1].body and "reasoning" not in sim.requests[-1].body


@pytest.mark.parametrize("wire", RESPONSES_WIRES)
async def test_another_providers_thinking_fails_before_sending(
    host: HostClient, sim: Simulator, wire: str
) -> None:
    agent = await create_llm(host, sim, wire)
    conversation = [
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [{"type": "reasoning", "text": "hm", "signature": "s"}]},
        {"role": "user", "content": [text("again")]},
    ]
    result = await host.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is False and result["errorInfo"]["kind"] == "unsupported_block"
    assert "messages[1].content[0]" in result["output"]
    assert "providerMetadata.openai.itemId" in result["output"]
    assert sim.requests == []


async def test_rich_tool_results_and_errors_become_function_call_outputs(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "openai-responses")
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
    conversation = [
        {"role": "user", "content": [text("look")]},
        {"role": "assistant", "content": [FILE_READ, {**FILE_READ, "id": "call_2"}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [
                        text("a picture and a report"),
                        image(),
                        {"type": "file", "filename": "r.pdf", "source": pdf},
                    ],
                },
                {"type": "tool_result", "tool_use_id": "call_2", "content": "no", "is_error": True},
            ],
        },
    ]
    assert (await host.request("agent/run", {"agentId": agent, "input": conversation}))["success"]
    outputs = sim.requests[0].body["input"][3:]
    assert outputs == [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [
                {"type": "input_text", "text": "a picture and a report"},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{PNG}",
                    "detail": "auto",
                },
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBERi0=",
                    "filename": "r.pdf",
                },
            ],
        },
        {"type": "function_call_output", "call_id": "call_2", "output": "[error] no"},
    ]


@pytest.mark.parametrize("wire", RESPONSES_WIRES)
async def test_no_key_appears_in_any_output(host: HostClient, sim: Simulator, wire: str) -> None:
    key = AZURE_KEY if wire == "azure" else OPENAI_KEY
    agent = await create_llm(host, sim, wire)
    sim.script(Fault(401, f"Incorrect API key provided: {key}"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "auth"
    sim.script(Reply.text(f"the key is {key}"))
    streamed = await host.request(
        "agent/stream", {"agentId": agent, "input": "x", "partialResultToken": "k"}
    )
    everything = json.dumps([result, streamed, host.notifications])
    assert key not in everything and "[redacted]" in everything


# -- Azure ----------------------------------------------------------------------


async def test_azure_chat_uses_the_deployment_and_max_completion_tokens(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "azure", api="chat", maxTokens=99)
    assert (await host.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
    request = sim.requests[0]
    assert request.path == "/openai/v1/chat/completions"
    assert request.body["model"] == "sim-deployment"
    assert request.body["max_completion_tokens"] == 99 and "max_tokens" not in request.body
    assert request.headers["api-key"] == AZURE_KEY


async def test_azure_endpoint_and_entra_token_from_the_environment(sim: Simulator) -> None:
    token = "eyJ0eXAiOiJKV1Qi-entra-token-DO-NOT-LEAK"
    client = await HostClient.spawn(
        env={
            "AZURE_OPENAI_ENDPOINT": sim.base_url + "/openai/v1/",
            "AZURE_OPENAI_AD_TOKEN": token,
            "AZURE_OPENAI_API_KEY": "",
        }
    )
    try:
        await client.initialize()
        config = {"name": "az", "provider": "azure", "model": "my-gpt"}
        agent = (await client.request("agent/create", {"config": config}))["agentId"]
        sim.script(Reply.text(f"echo {token}"))
        result = await client.request("agent/run", {"agentId": agent, "input": "x"})
        assert result["success"] is True and token not in json.dumps(result)
        request = sim.requests[0]
        assert request.path == "/openai/v1/responses"
        assert request.headers["authorization"] == f"Bearer {token}"
        assert "api-key" not in request.headers
    finally:
        await client.close()


async def test_azure_without_an_endpoint_or_a_key_says_what_to_set(sim: Simulator) -> None:
    client = await HostClient.spawn(
        env={"AZURE_OPENAI_ENDPOINT": "", "AZURE_OPENAI_API_KEY": "", "AZURE_OPENAI_AD_TOKEN": ""}
    )
    try:
        await client.initialize()
        config = {"name": "az", "provider": "azure", "model": "d"}
        agent = (await client.request("agent/create", {"config": config}))["agentId"]
        result = await client.request("agent/run", {"agentId": agent, "input": "x"})
        assert result["success"] is False and result["errorInfo"]["kind"] == "connection"
        assert "baseURL" in result["output"] and "AZURE_OPENAI_ENDPOINT" in result["output"]
        config = {"name": "az", "provider": "azure", "model": "d", "baseURL": sim.base_url}
        agent = (await client.request("agent/create", {"config": config}))["agentId"]
        result = await client.request("agent/run", {"agentId": agent, "input": "x"})
        assert result["success"] is False and result["errorInfo"]["kind"] == "auth"
        assert "AZURE_OPENAI_API_KEY" in result["output"]
        assert "AZURE_OPENAI_AD_TOKEN" in result["output"]
        assert sim.requests == []
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("https://res.openai.azure.com", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai", "https://res.openai.azure.com/openai/v1"),
        ("https://res.openai.azure.com/openai/v1/", "https://res.openai.azure.com/openai/v1"),
    ],
)
def test_azure_endpoints_given_either_way_become_the_v1_base_url(
    endpoint: str, expected: str
) -> None:
    assert v1_base_url(endpoint) == expected


# -- Chat Completions -------------------------------------------------------------


def test_the_api_and_the_output_limit_field_follow_the_endpoint() -> None:
    def target(**fields: Any) -> Any:
        return openai_target(AgentConfig.model_validate({"name": "a", **fields}))

    official = target()
    assert official.api == "responses" and official.token_limit_field == "max_completion_tokens"
    forced = target(api="chat", baseURL="https://api.openai.com/v1/")
    assert forced.api == "chat" and forced.token_limit_field == "max_completion_tokens"
    compatible = target(baseURL="http://localhost:11434/v1")
    assert compatible.api == "chat" and compatible.token_limit_field == "max_tokens"
    assert target(baseURL="http://localhost:8000/v1", api="responses").api == "responses"


async def test_a_compatible_server_gets_max_tokens(host: HostClient, sim: Simulator) -> None:
    agent = await create_llm(host, sim, "openai", maxTokens=77)
    assert (await host.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
    body = sim.requests[0].body
    assert sim.requests[0].path == "/v1/chat/completions"
    assert body["max_tokens"] == 77 and "max_completion_tokens" not in body


@pytest.mark.parametrize("streaming", [False, True])
async def test_gemini_thought_signatures_on_tool_calls_are_sent_back_exactly(
    host: HostClient, sim: Simulator, streaming: bool, tmp_path: Path
) -> None:
    (tmp_path / "n.txt").write_text("42")
    agent = await create_llm(host, sim, "openai", tools=["file_read"], cwd=str(tmp_path))
    signature = "CiQBjz1rX+signature/with=padding=="
    signed = {**FILE_READ, "providerMetadata": {"google": {"thoughtSignature": signature}}}
    sim.script(reply(signed), Reply.text("done"))
    method, params = _run_params(agent, "read it", streaming)
    result = await host.request(method, params)
    assert result["success"] is True and result["messages"][0]["content"] == [signed]
    [assistant] = [m for m in sim.requests[1].body["messages"] if m["role"] == "assistant"]
    [call] = assistant["tool_calls"]
    assert call["extra_content"] == {"google": {"thought_signature": signature}}
    assert call["id"] == "call_1" and json.loads(call["function"]["arguments"]) == {"path": "n.txt"}
    if streaming:
        streamed = next(e["data"] for e in host.progress("s") if e["type"] == "tool_use")
        assert streamed == signed


async def test_an_unsigned_tool_call_sends_no_extra_content(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "openai")
    conversation = [
        {"role": "user", "content": [text("go")]},
        {"role": "assistant", "content": [FILE_READ]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "42"}],
        },
    ]
    assert (await host.request("agent/run", {"agentId": agent, "input": conversation}))["success"]
    [call] = sim.requests[0].body["messages"][1]["tool_calls"]
    assert "extra_content" not in call


async def test_thinking_effort_is_reasoning_effort(host: HostClient, sim: Simulator) -> None:
    agent = await create_llm(
        host, sim, "openai-responses", model="gpt-4.1", thinking={"effort": "high"}
    )
    assert (await host.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
    body = sim.requests[0].body
    assert body["reasoning"] == {"summary": "auto", "effort": "high"}
    assert body["include"] == ["reasoning.encrypted_content"]
