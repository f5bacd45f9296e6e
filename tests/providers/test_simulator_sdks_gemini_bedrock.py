"""The simulator's Gemini and Bedrock wires, checked against the vendors'
own Python SDKs (``google-genai``; boto3's ``bedrock-runtime`` client): each
SDK parses the simulator's answers (text, function calls, thinking with its
signature, streaming, usage, errors, the model list), and what each SDK
sends is what the simulator reads (and, for boto3, a SigV4 signature that
oma-host's signer reproduces)."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from oma_host.providers import sigv4
from oma_host.testing.script import RecordedRequest
from oma_host.testing.simulator import Fault, Reply, Simulator, too_long_fault
from tests.builders import tool_use
from tests.providers.helpers import PNG

genai = pytest.importorskip("google.genai")
boto3 = pytest.importorskip("boto3")

from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from google.genai import errors as genai_errors  # noqa: E402
from google.genai import types  # noqa: E402

SIGNATURE = base64.b64encode(b"opaque-thought-signature").decode()
USAGE = {
    "input_tokens": 50,
    "output_tokens": 30,
    "cache_read_input_tokens": 400,
    "reasoning_tokens": 12,
}
REPLY = [
    {"type": "reasoning", "text": "Thinking it over."},
    {"type": "text", "text": "Looking it up."},
    {
        "type": "tool_use",
        "id": "call_1",
        "name": "lookup",
        "input": {"q": "weather", "days": 2},
        "providerMetadata": {"google": {"thoughtSignature": SIGNATURE}},
    },
]


# --------------------------------------------------------------------------
# google-genai


def gemini(sim: Simulator) -> Any:
    options = types.HttpOptions(
        base_url=sim.base_url,
        api_version="v1beta",  # the SDK's default for a custom base URL is v1
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key="sim-gemini-key", http_options=options)


def test_google_genai_reads_text_thoughts_function_calls_and_usage(sim: Simulator) -> None:
    client = gemini(sim)
    sim.script(Reply(content=REPLY, usage=USAGE))
    response = client.models.generate_content(
        model="gemini-3-pro-preview",
        contents=[
            types.Content(
                role="user",
                parts=[
                    types.Part(text="What is the weather?"),
                    types.Part.from_bytes(data=base64.b64decode(PNG), mime_type="image/png"),
                ],
            )
        ],
        config=types.GenerateContentConfig(
            system_instruction="Be brief.",
            thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_level="HIGH"),
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name="lookup",
                            description="Looks things up",
                            parameters_json_schema={"type": "object"},
                        )
                    ]
                )
            ],
        ),
    )
    parts = response.candidates[0].content.parts
    assert parts[0].thought is True and parts[0].text == "Thinking it over."
    assert parts[1].text == "Looking it up."
    assert parts[2].function_call.name == "lookup"
    assert parts[2].function_call.args == {"q": "weather", "days": 2}
    assert parts[2].thought_signature == b"opaque-thought-signature"
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    assert response.model_version == "gemini-3-pro-preview"  # the model asked, unless told
    usage = response.usage_metadata
    assert usage.prompt_token_count == 450 and usage.cached_content_token_count == 400
    assert usage.candidates_token_count == 18 and usage.thoughts_token_count == 12
    # What the SDK sent is the form the adapter sends.
    request = sim.requests[-1]
    assert request.path == "/v1beta/models/gemini-3-pro-preview:generateContent"
    assert request.headers["x-goog-api-key"] == "sim-gemini-key"
    # The SDK writes inline data snake_case and url-safe; the API reads that
    # and the adapter's camelCase, standard base64 alike.
    inline = request.body["contents"][0]["parts"][1]["inlineData"]
    assert inline["mime_type"] == "image/png"
    assert base64.urlsafe_b64decode(inline["data"]) == base64.b64decode(PNG)
    assert request.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    # Nested fields come snake_case from the SDK; the API reads both spellings.
    declaration = request.body["tools"][0]["functionDeclarations"][0]
    assert declaration["parameters_json_schema"] == {"type": "object"}
    thinking = request.body["generationConfig"]["thinkingConfig"]
    assert thinking == {"include_thoughts": True, "thinking_level": "HIGH"}


def test_google_genai_streams_and_sends_function_responses_as_the_adapter_does(
    sim: Simulator,
) -> None:
    client = gemini(sim)
    sim.script(Reply(content=REPLY, usage=USAGE, chunk_size=4, model="gemini-2.5-flash-001"))
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    assert sim.requests[-1].path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    parts = [
        part
        for chunk in chunks
        if chunk.candidates
        for part in chunk.candidates[0].content.parts or []
    ]
    thoughts = "".join(p.text for p in parts if p.thought and p.text)
    answer = "".join(p.text for p in parts if not p.thought and p.text)
    assert thoughts == "Thinking it over." and answer == "Looking it up."
    calls = [p for p in parts if p.function_call]
    assert len(calls) == 1 and calls[0].thought_signature == b"opaque-thought-signature"
    assert chunks[-1].usage_metadata.thoughts_token_count == 12
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    assert {chunk.model_version for chunk in chunks} == {"gemini-2.5-flash-001"}
    # The next turn, as the SDK writes it: the signature goes back on its part.
    sim.script(Reply.text("Sunny."))
    response = client.models.generate_content(
        model="gemini-2.5-flash",
        contents=[
            types.Content(role="user", parts=[types.Part(text="hi")]),
            types.Content(role="model", parts=[calls[0]]),
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(name="lookup", response={"output": "sun"})
                ],
            ),
        ],
    )
    assert response.text == "Sunny."
    sent = sim.requests[-1].body["contents"]
    assert sent[1]["parts"][0]["thoughtSignature"] == SIGNATURE
    assert sent[1]["parts"][0]["functionCall"] == {
        "name": "lookup",
        "args": {"q": "weather", "days": 2},
    }
    assert sent[2]["parts"][0] == {
        "functionResponse": {"name": "lookup", "response": {"output": "sun"}}
    }


@pytest.mark.parametrize(
    ("fault", "code", "status"),
    [
        (Fault(429, "quota exhausted"), 429, "RESOURCE_EXHAUSTED"),
        (Fault(400, "API key not valid.", error_type="API_KEY_INVALID"), 400, "INVALID_ARGUMENT"),
        (Fault(503, "overloaded"), 503, "UNAVAILABLE"),
    ],
)
def test_google_genai_reads_the_error_bodies(
    sim: Simulator, fault: Fault, code: int, status: str
) -> None:
    sim.script(fault)
    client = gemini(sim)
    with pytest.raises(genai_errors.APIError) as raised:
        client.models.generate_content(model="gemini-3-pro-preview", contents="hi")
    assert raised.value.code == code and raised.value.status == status
    assert raised.value.message == fault.message


def test_google_genai_reads_the_token_count_exceeded_answer(sim: Simulator) -> None:
    sim.script(too_long_fault("gemini", tokens=1_200_000, limit=1_048_576))
    client = gemini(sim)  # kept: the SDK closes its HTTP client with the object
    with pytest.raises(genai_errors.ClientError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert raised.value.code == 400 and raised.value.status == "INVALID_ARGUMENT"
    assert raised.value.message == (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
    )


def test_google_genai_lists_the_models(sim: Simulator) -> None:
    sim.models = ["gemini-3-pro-preview", "gemini-2.5-flash"]
    client = gemini(sim)
    names = [model.name for model in client.models.list()]
    assert names == ["models/gemini-3-pro-preview", "models/gemini-2.5-flash"]
    assert sim.requests[-1].path.startswith("/v1beta/models")


# --------------------------------------------------------------------------
# boto3 bedrock-runtime

ACCESS, SECRET, TOKEN, REGION = "AKIASIMULATOR", "sim/secret+key", "sim-session-token", "us-west-2"
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
BEDROCK_REPLY = [
    {"type": "reasoning", "text": "Thinking it over.", "signature": "sig-abc"},
    {"type": "text", "text": "Looking it up."},
    tool_use("tooluse_1", "lookup", q="weather"),
]
BEDROCK_USAGE = {
    "input_tokens": 20,
    "output_tokens": 30,
    "cache_read_input_tokens": 100,
    "cache_creation_input_tokens": 7,
}


def bedrock(sim: Simulator) -> Any:
    return boto3.client(
        "bedrock-runtime",
        region_name=REGION,
        endpoint_url=sim.base_url,
        aws_access_key_id=ACCESS,
        aws_secret_access_key=SECRET,
        aws_session_token=TOKEN,
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}),
    )


def signed_by_boto3_as_oma_host_signs(request: RecordedRequest) -> bool:
    """oma-host's signer, given the request boto3 sent, computes boto3's signature."""
    auth = request.headers["authorization"]
    found = re.search(r"SignedHeaders=([^,]+), Signature=(\w+)", auth)
    assert found is not None and f"Credential={ACCESS}/" in auth
    headers = {name: request.headers[name] for name in found.group(1).split(";")}
    value, _ = sigv4.signature(
        sigv4.Credentials(ACCESS, SECRET, TOKEN),
        request.method,
        f"http://{request.headers['host']}{request.path}",
        headers,
        request.raw,
        region=REGION,
        service="bedrock",
        amz_date=request.headers["x-amz-date"],
    )
    return value == found.group(2)


def test_boto3_converse_reads_the_simulator_and_signs_as_oma_host_does(sim: Simulator) -> None:
    sim.script(Reply(content=BEDROCK_REPLY, usage=BEDROCK_USAGE))
    response = bedrock(sim).converse(
        modelId=MODEL,
        system=[{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        messages=[
            {
                "role": "user",
                "content": [
                    {"text": "What is the weather?"},
                    {"image": {"format": "png", "source": {"bytes": base64.b64decode(PNG)}}},
                ],
            }
        ],
        additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 2048}},
    )
    content = response["output"]["message"]["content"]
    assert content[0]["reasoningContent"]["reasoningText"] == {
        "text": "Thinking it over.",
        "signature": "sig-abc",
    }
    assert content[1] == {"text": "Looking it up."}
    assert content[2]["toolUse"] == {
        "toolUseId": "tooluse_1",
        "name": "lookup",
        "input": {"q": "weather"},
    }
    assert response["stopReason"] == "tool_use"
    usage = response["usage"]
    assert (usage["inputTokens"], usage["outputTokens"]) == (20, 30)
    assert (usage["cacheReadInputTokens"], usage["cacheWriteInputTokens"]) == (100, 7)
    request = sim.requests[-1]
    assert request.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    # boto3 writes an image as the adapter does.
    assert request.body["messages"][0]["content"][1] == {
        "image": {"format": "png", "source": {"bytes": PNG}}
    }
    assert request.headers["x-amz-security-token"] == TOKEN
    assert signed_by_boto3_as_oma_host_signs(request)


def test_boto3_converse_stream_decodes_the_event_stream(sim: Simulator) -> None:
    redacted = base64.b64encode(b"\x00encrypted").decode()
    reply = [*BEDROCK_REPLY, {"type": "reasoning", "text": "", "redactedData": redacted}]
    sim.script(Reply(content=reply, usage=BEDROCK_USAGE, chunk_size=3))
    response = bedrock(sim).converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
    )
    events = list(response["stream"])
    kinds = [next(iter(event)) for event in events]
    assert kinds[0] == "messageStart" and kinds[-2:] == ["messageStop", "metadata"]
    deltas = [e["contentBlockDelta"]["delta"] for e in events if "contentBlockDelta" in e]
    assert "".join(d["text"] for d in deltas if "text" in d) == "Looking it up."
    reasoning = [d["reasoningContent"] for d in deltas if "reasoningContent" in d]
    assert "".join(r.get("text", "") for r in reasoning) == "Thinking it over."
    assert [r["signature"] for r in reasoning if "signature" in r] == ["sig-abc"]
    assert [r["redactedContent"] for r in reasoning if "redactedContent" in r] == [b"\x00encrypted"]
    start = next(e["contentBlockStart"] for e in events if "contentBlockStart" in e)
    assert start["start"]["toolUse"] == {"toolUseId": "tooluse_1", "name": "lookup"}
    tool_input = "".join(d["toolUse"]["input"] for d in deltas if "toolUse" in d)
    assert tool_input == '{"q": "weather"}'
    assert events[-2]["messageStop"]["stopReason"] == "tool_use"
    assert events[-1]["metadata"]["usage"]["cacheWriteInputTokens"] == 7
    assert sim.requests[-1].path.endswith("/converse-stream")
    assert signed_by_boto3_as_oma_host_signs(sim.requests[-1])


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (Fault(429, "Too many requests"), "ThrottlingException"),
        (Fault(400, "Malformed input request"), "ValidationException"),
        (
            Fault(403, "bad token", error_type="UnrecognizedClientException"),
            "UnrecognizedClientException",
        ),
        (Fault(503, "try later"), "ServiceUnavailableException"),
    ],
)
def test_boto3_reads_the_error_bodies(sim: Simulator, fault: Fault, code: str) -> None:
    sim.script(fault)
    with pytest.raises(ClientError) as raised:
        bedrock(sim).converse(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}]
        )
    error = raised.value.response["Error"]
    assert error["Code"] == code and error["Message"] == fault.message
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == fault.status


def test_boto3_reads_the_input_too_long_answer(sim: Simulator) -> None:
    sim.script(too_long_fault("bedrock"))
    with pytest.raises(ClientError) as raised:
        bedrock(sim).converse(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "x"}]}]
        )
    error = raised.value.response["Error"]
    assert error["Code"] == "ValidationException"
    assert error["Message"] == "Input is too long for requested model."
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_a_broken_event_stream_is_refused_by_boto3_too(sim: Simulator) -> None:
    from botocore.eventstream import ChecksumMismatch
    from botocore.exceptions import EventStreamError as BotoEventStreamError

    sim.script(Reply.text("hello", malformed=True))
    response = bedrock(sim).converse_stream(
        modelId=MODEL, messages=[{"role": "user", "content": [{"text": "hi"}]}]
    )
    with pytest.raises((ChecksumMismatch, BotoEventStreamError)):
        list(response["stream"])
