"""Gemini (native) and Amazon Bedrock (Converse), over stdio against the
simulator: text, an image, a tool loop, streaming, thinking with its
signatures, cache usage, each kind of fault, the credentials (SigV4 checked
by botocore, the AWS profile files, a Bedrock API key), and no key, secret
or signature in anything the host writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.builders import text, tool_use
from tests.providers.gemini_bedrock import (
    AWS_ACCESS_KEY,
    AWS_SECRET,
    AWS_TOKEN,
    GB_PROVIDERS,
    GEMINI_KEY,
    gb_config,
    host_env,
    signature_is_valid,
)
from tests.providers.helpers import PNG, image
from tests.server.helpers import HostFactory


@pytest.fixture
def host_variables() -> dict[str, str]:
    return host_env()


async def create(host: HostClient, sim: Simulator, provider: str, **extra: Any) -> str:
    result = await host.request("agent/create", {"config": gb_config(sim, provider, **extra)})
    agent_id: str = result["agentId"]
    return agent_id


async def run(host: HostClient, agent: str, input: Any, streaming: bool) -> dict[str, Any]:
    if streaming:
        params = {"agentId": agent, "input": input, "partialResultToken": "s"}
        result: dict[str, Any] = await host.request("agent/stream", params)
    else:
        result = await host.request("agent/run", {"agentId": agent, "input": input})
    return result


def check_auth(provider: str, sim: Simulator) -> None:
    """Every request authenticated as the provider wants, the key never in the URL."""
    for request in sim.requests:
        if provider == "gemini":
            assert request.headers["x-goog-api-key"] == GEMINI_KEY
            assert GEMINI_KEY not in request.path and "key=" not in request.path
        else:
            assert request.headers["x-amz-security-token"] == AWS_TOKEN
            assert signature_is_valid(request), request.headers["authorization"]


@pytest.mark.parametrize("provider", GB_PROVIDERS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_text_and_an_image_reach_the_provider_in_its_own_form(
    host: HostClient, sim: Simulator, provider: str, streaming: bool
) -> None:
    agent = await create(host, sim, provider, systemPrompt="Be brief.", maxTokens=300)
    conversation = [{"role": "user", "content": [text("What is this?"), image()]}]
    result = await run(host, agent, conversation, streaming)
    # The simulator's default answer says what the last user message held.
    assert result["success"] is True, result
    assert "text 'What is this?', image image/png" in result["output"]
    body = sim.requests[0].body
    if provider == "gemini":
        path = "/v1beta/models/gemini-3-pro-preview:" + (
            "streamGenerateContent?alt=sse" if streaming else "generateContent"
        )
        assert sim.requests[0].path == path
        assert body["contents"] == [
            {
                "role": "user",
                "parts": [
                    {"text": "What is this?"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                ],
            }
        ]
        assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
        assert body["generationConfig"] == {"maxOutputTokens": 300}
    else:
        action = "converse-stream" if streaming else "converse"
        path = f"/model/anthropic.claude-sonnet-4-5-20250929-v1:0/{action}"
        assert sim.requests[0].path == path
        assert body["messages"] == [
            {
                "role": "user",
                "content": [
                    {"text": "What is this?"},
                    {"image": {"format": "png", "source": {"bytes": PNG}}},
                ],
            }
        ]
        assert body["system"] == [{"text": "Be brief."}]  # caching is off by default here
        assert body["inferenceConfig"] == {"maxTokens": 300}
    if streaming:
        streamed = "".join(e["data"] for e in host.progress("s") if e["type"] == "text")
        assert streamed == result["output"]
    check_auth(provider, sim)


def first_reply(provider: str) -> list[dict[str, Any]]:
    """Thinking, text and a tool call, each signed the provider's way."""
    call: dict[str, Any] = tool_use("tooluse_1", "file_read", path="notes.txt")
    if provider == "gemini":
        signed = {"providerMetadata": {"google": {"thoughtSignature": "Cs0BAdHtim9+c2lnMQ=="}}}
        return [
            {"type": "reasoning", "text": "The notes file should say."},
            text("Let me read it."),
            {**call, **signed},
        ]
    return [
        {"type": "reasoning", "text": "The notes file should say.", "signature": "EqQBCkYIBxgC"},
        text("Let me read it."),
        call,
    ]


@pytest.mark.parametrize("provider", GB_PROVIDERS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_a_tool_loop_streams_in_order_and_sends_signatures_back_unchanged(
    host: HostClient, sim: Simulator, provider: str, streaming: bool, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    agent = await create(host, sim, provider, tools=["file_read"], cwd=str(tmp_path))
    sim.script(Reply(content=first_reply(provider), chunk_size=5), Reply.text("It says 42."))
    result = await run(host, agent, "What do the notes say?", streaming)
    assert result["success"] is True and result["output"] == "It says 42.", result
    assert [call["toolName"] for call in result["toolCalls"]] == ["file_read"]
    assert result["tokenUsage"] == {"input_tokens": 20, "output_tokens": 10}
    if streaming:
        wanted = {"reasoning", "text", "tool_use", "tool_result"}
        kinds = [e["type"] for e in host.progress("s") if e["type"] in wanted]
        collapsed = [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k]
        assert collapsed == ["reasoning", "text", "tool_use", "tool_result", "text"]
        reasoning = "".join(e["data"] for e in host.progress("s") if e["type"] == "reasoning")
        assert reasoning == "The notes file should say."
    assistant = result["messages"][0]["content"]
    assert [block["type"] for block in assistant] == ["reasoning", "text", "tool_use"]
    second = sim.requests[1].body
    if provider == "gemini":
        # Gemini gave the call no id: the host made one up and sends none back.
        call_id = assistant[2]["id"]
        assert call_id.startswith("gemini_call_")
        assert assistant[2]["providerMetadata"] == {
            "google": {"thoughtSignature": "Cs0BAdHtim9+c2lnMQ=="}
        }
        assert second["contents"][1:] == [
            {
                "role": "model",
                "parts": [
                    {"text": "The notes file should say.", "thought": True},
                    {"text": "Let me read it."},
                    {
                        "functionCall": {"name": "file_read", "args": {"path": "notes.txt"}},
                        "thoughtSignature": "Cs0BAdHtim9+c2lnMQ==",
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "file_read",
                            "response": {"output": "the answer is 42\n"},
                        }
                    }
                ],
            },
        ]
        declaration = second["tools"][0]["functionDeclarations"][0]
        assert declaration["name"] == "file_read" and "parametersJsonSchema" in declaration
    else:
        assert second["messages"][1:] == [
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {
                                "text": "The notes file should say.",
                                "signature": "EqQBCkYIBxgC",
                            }
                        }
                    },
                    {"text": "Let me read it."},
                    {
                        "toolUse": {
                            "toolUseId": "tooluse_1",
                            "name": "file_read",
                            "input": {"path": "notes.txt"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "tooluse_1",
                            "content": [{"text": "the answer is 42\n"}],
                        }
                    }
                ],
            },
        ]
        spec = second["toolConfig"]["tools"][0]["toolSpec"]
        assert spec["name"] == "file_read" and spec["inputSchema"]["json"]["type"] == "object"
    check_auth(provider, sim)


async def test_bedrock_tool_errors_and_images_in_tool_results(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create(host, sim, "bedrock")
    conversation = [
        {"role": "user", "content": [text("look")]},
        {
            "role": "assistant",
            "content": [tool_use("t1", "shot")],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [text("a screenshot"), image()],
                },
            ],
        },
        {
            "role": "assistant",
            "content": [tool_use("t2", "x")],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t2", "content": "no", "is_error": True}
            ],
        },
    ]
    result = await host.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is True, result
    messages = sim.requests[0].body["messages"]
    assert messages[2]["content"][0]["toolResult"]["content"] == [
        {"text": "a screenshot"},
        {"image": {"format": "png", "source": {"bytes": PNG}}},
    ]
    assert messages[4]["content"][0]["toolResult"] == {
        "toolUseId": "t2",
        "content": [{"text": "no"}],
        "status": "error",
    }


@pytest.mark.parametrize("streaming", [False, True])
async def test_gemini_thinking_config_and_usage(
    host: HostClient, sim: Simulator, streaming: bool
) -> None:
    usage = {
        "input_tokens": 100,
        "output_tokens": 40,
        "cache_read_input_tokens": 900,
        "reasoning_tokens": 30,
    }
    cases = [
        ("gemini-3-pro-preview", {"effort": "low"}, {"thinkingLevel": "LOW"}),
        ("gemini-2.5-flash", {"effort": "high"}, {"thinkingBudget": 24576}),
        ("gemini-3-flash", {"budgetTokens": 2048}, {"thinkingBudget": 2048}),
    ]
    for model, thinking, expected in cases:
        agent = await create(host, sim, "gemini", model=model, thinking=thinking)
        sim.script(Reply(content=[{"type": "reasoning", "text": "hmm"}, text("ok")], usage=usage))
        result = await run(host, agent, "think", streaming)
        assert result["success"] is True, result
        assert result["tokenUsage"] == usage
        config = sim.requests[-1].body["generationConfig"]["thinkingConfig"]
        assert config == {"includeThoughts": True, **expected}
        assert result["messages"][0]["content"][0] == {"type": "reasoning", "text": "hmm"}


@pytest.mark.parametrize("streaming", [False, True])
async def test_bedrock_thinking_and_prompt_caching(
    host: HostClient, sim: Simulator, streaming: bool, tmp_path: Path
) -> None:
    usage = {
        "input_tokens": 12,
        "output_tokens": 40,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 0,
    }
    agent = await create(
        host,
        sim,
        "bedrock",
        systemPrompt="You are terse.",
        tools=["file_read"],
        cwd=str(tmp_path),
        thinking={"budgetTokens": 4000},
        promptCaching=True,
    )
    sim.script(Reply.text("ok", usage=usage))
    result = await run(host, agent, "hi", streaming)
    assert result["success"] is True, result
    # A zero count is not reported; the others add up as they came.
    assert result["tokenUsage"] == {
        "input_tokens": 12,
        "output_tokens": 40,
        "cache_creation_input_tokens": 2000,
    }
    body = sim.requests[-1].body
    point = {"cachePoint": {"type": "default"}}
    assert body["system"] == [{"text": "You are terse."}, point]
    assert body["toolConfig"]["tools"][-1] == point
    assert body["messages"][-1]["content"] == [{"text": "hi"}, point]
    assert body["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 4000}
    }
    assert body["inferenceConfig"]["maxTokens"] > 4000
    # Claude 4.6 and later think adaptively, at an effort.
    agent = await create(
        host, sim, "bedrock", model="us.anthropic.claude-opus-4-6-v1", thinking={"effort": "low"}
    )
    assert (await run(host, agent, "hi", streaming))["success"] is True
    assert sim.requests[-1].body["additionalModelRequestFields"] == {
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "low"},
    }
    # Other models take an effort only.
    agent = await create(
        host, sim, "bedrock", model="openai.gpt-oss-120b-1:0", thinking={"effort": "medium"}
    )
    assert (await run(host, agent, "hi", streaming))["success"] is True
    assert sim.requests[-1].body["additionalModelRequestFields"] == {"reasoning_effort": "medium"}
    agent = await create(
        host, sim, "bedrock", model="openai.gpt-oss-120b-1:0", thinking={"budgetTokens": 900}
    )
    result = await run(host, agent, "hi", streaming)
    assert result["success"] is False and "budgetTokens" in result["output"]
    check_auth("bedrock", sim)


@pytest.mark.parametrize("provider", GB_PROVIDERS)
@pytest.mark.parametrize("streaming", [False, True])
async def test_every_injected_fault_ends_in_a_clear_result(
    host: HostClient, sim: Simulator, provider: str, streaming: bool
) -> None:
    agent = await create(host, sim, provider)
    sim.script(Fault(429, "slow down", retry_after=0.2), Reply.text("after 429"))
    assert (await run(host, agent, "x", streaming))["output"] == "after 429"
    sim.script(Fault(500, "boom"), Fault(503, "busy"), Reply.text("third time"))
    assert (await run(host, agent, "x", streaming))["output"] == "third time"
    before = len(sim.requests)
    sim.script(Fault(503, "down"), Fault(503, "down"), Fault(503, "still down"))
    result = await run(host, agent, "x", streaming)
    assert result["success"] is False and result["errorInfo"]["kind"] == "provider"
    assert "still down" in result["output"] and "HTTP 503" in result["output"]
    assert len(sim.requests) - before == 3  # one try and two retries
    error_name = "UNAVAILABLE" if provider == "gemini" else "ServiceUnavailableException"
    assert error_name in result["output"]
    sim.script(Fault(400, "model does not exist"))
    result = await run(host, agent, "x", streaming)
    assert result["errorInfo"]["kind"] == "provider" and "model does not exist" in result["output"]
    assert len(sim.requests) - before == 4  # a 400 is not retried
    refused = "PERMISSION_DENIED" if provider == "gemini" else "UnrecognizedClientException"
    sim.script(
        Fault(403, "The security token included in the request is invalid", error_type=refused)
    )
    result = await run(host, agent, "x", streaming)
    assert result["errorInfo"]["kind"] == "auth" and "HTTP 403" in result["output"], result
    sim.script(Reply.text("abcdefghijklmnopqrstuvwxyz", malformed=True))
    result = await run(host, agent, "x", streaming)
    assert result["success"] is False and result["errorInfo"]["kind"] == "malformed", result
    if streaming:
        sim.script(Reply.text("cut me off in the middle please", chunk_size=3, cut_after_events=4))
        result = await run(host, agent, "x", streaming)
        assert result["success"] is False and result["errorInfo"]["kind"] == "stream", result
    sim.script(Reply.text("still serving"))
    assert (await run(host, agent, "x", streaming))["output"] == "still serving"


async def test_gemini_answers_a_bad_key_with_400_and_that_is_an_auth_failure(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create(host, sim, "gemini")
    bad_key = "API key not valid. Please pass a valid API key."
    sim.script(Fault(400, bad_key, error_type="API_KEY_INVALID"), Fault(400, "bad schema"))
    result = await run(host, agent, "x", False)
    assert result["errorInfo"]["kind"] == "auth" and bad_key in result["output"], result
    assert "INVALID_ARGUMENT" in result["output"] and "HTTP 400" in result["output"]
    result = await run(host, agent, "x", False)  # any other 400 is the provider's
    assert result["errorInfo"]["kind"] == "provider" and "bad schema" in result["output"]


@pytest.mark.parametrize("provider", GB_PROVIDERS)
async def test_missing_credentials_fail_the_run_before_any_request(
    sim: Simulator, provider: str, spawn_host: HostFactory
) -> None:
    env = host_env(GEMINI_API_KEY="", AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="")
    client = await spawn_host(env=env)
    agent = (await client.request("agent/create", {"config": gb_config(sim, provider)}))["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "auth", result
    if provider == "gemini":
        assert "GEMINI_API_KEY or GOOGLE_API_KEY" in result["output"]
    else:
        assert "AWS_ACCESS_KEY_ID" in result["output"]
        assert "/nonexistent/oma-test/credentials" in result["output"]
    assert sim.requests == []
    assert await client.close() == 0


async def test_google_api_key_is_the_fallback_and_api_key_env_names_another(
    sim: Simulator, spawn_host: HostFactory
) -> None:
    client = await spawn_host(
        env=host_env(GEMINI_API_KEY="", GOOGLE_API_KEY="google-fallback", OMA_MY_KEY="mine")
    )
    for extra, expected in (({}, "google-fallback"), ({"apiKeyEnv": "OMA_MY_KEY"}, "mine")):
        config = gb_config(sim, "gemini", **extra)
        agent = (await client.request("agent/create", {"config": config}))["agentId"]
        assert (await client.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
        assert sim.requests[-1].headers["x-goog-api-key"] == expected
    assert await client.close() == 0


async def test_bedrock_reads_the_profile_files_and_its_region(
    sim: Simulator, tmp_path: Path, spawn_host: HostFactory
) -> None:
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = nope\n\n"
        "[work]\naws_access_key_id = AKIAWORKPROFILE\naws_secret_access_key = work-secret-X\n"
    )
    config_file = tmp_path / "config"
    config_file.write_text("[profile work]\nregion = ap-south-2\n")
    env = host_env(
        AWS_ACCESS_KEY_ID="",
        AWS_SECRET_ACCESS_KEY="",
        AWS_SESSION_TOKEN="",
        AWS_REGION="",
        AWS_PROFILE="work",
        AWS_SHARED_CREDENTIALS_FILE=str(credentials),
        AWS_CONFIG_FILE=str(config_file),
    )
    client = await spawn_host(env=env)
    agent = (await client.request("agent/create", {"config": gb_config(sim, "bedrock")}))["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is True, result
    request = sim.requests[-1]
    assert "Credential=AKIAWORKPROFILE/" in request.headers["authorization"]
    assert "x-amz-security-token" not in request.headers
    assert signature_is_valid(request, secret="work-secret-X", region="ap-south-2")
    assert not signature_is_valid(request, secret="nope", region="ap-south-2")
    assert await client.close() == 0


async def test_bedrock_api_key_is_sent_as_a_bearer_token_unsigned(
    sim: Simulator, spawn_host: HostFactory
) -> None:
    client = await spawn_host(env=host_env(AWS_BEARER_TOKEN_BEDROCK="ABSK-bedrock-key-1"))
    agent = (await client.request("agent/create", {"config": gb_config(sim, "bedrock")}))["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is True, result
    assert sim.requests[-1].headers["authorization"] == "Bearer ABSK-bedrock-key-1"
    assert "x-amz-date" not in sim.requests[-1].headers
    assert await client.close() == 0


async def test_no_key_secret_or_signature_in_anything_the_host_writes(
    sim: Simulator, tmp_path: Path, spawn_host: HostFactory
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    state = tmp_path / "state"
    client = await spawn_host(
        host_argv("--log-level", "DEBUG", "--state-dir", str(state)), env=host_env()
    )
    transcript: list[Any] = []
    for provider in GB_PROVIDERS:
        agent = await create(client, sim, provider, tools=["file_read"], cwd=str(tmp_path))
        sim.script(
            Reply(content=first_reply(provider)),
            Reply.text("done"),
            Fault(403, "denied"),
            Reply.text("partial answer", chunk_size=2, cut_after_events=2),
        )
        for streaming in (False, True, True):
            transcript.append(await run(client, agent, "go", streaming))
    signatures = [
        r.headers["authorization"].rsplit("Signature=", 1)[1]
        for r in sim.requests
        if r.headers.get("authorization", "").startswith("AWS4")
    ]
    assert len(signatures) >= 3
    assert await client.close() == 0
    records = "".join(
        path.read_text(errors="replace") for path in state.rglob("*") if path.is_file()
    )
    written = repr(client.received) + await client.stderr_text() + records
    assert [r["success"] for r in transcript] == [True, False, False] * 2, transcript
    assert "the answer is" in written  # the tool loop's traffic is all in there
    for secret in (GEMINI_KEY, AWS_SECRET, AWS_TOKEN, *signatures):
        assert secret not in written
    assert AWS_ACCESS_KEY not in written  # not a secret, but nothing writes it either


async def test_models_list_reads_geminis_model_list(host: HostClient, sim: Simulator) -> None:
    sim.models = ["gemini-3-pro-preview", "gemini-2.5-flash"]
    result = await host.request("models/list", {"provider": "gemini", "baseURL": sim.base_url})
    assert result == {
        "provider": "gemini",
        "models": [
            {"id": "gemini-3-pro-preview", "displayName": "gemini-3-pro-preview"},
            {"id": "gemini-2.5-flash", "displayName": "gemini-2.5-flash"},
        ],
    }
    request = sim.requests[-1]
    assert request.method == "GET" and request.path.startswith("/v1beta/models?")
    assert request.headers["x-goog-api-key"] == GEMINI_KEY and GEMINI_KEY not in request.path
