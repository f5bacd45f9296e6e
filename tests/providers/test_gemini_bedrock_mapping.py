"""Block mapping of the Gemini and Bedrock adapters, both ways, the blocks
their wires cannot carry (which fail, never vanish), and the error readers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from oma_host.core.config import AgentConfig
from oma_host.providers import bedrock, bedrock_reply, gemini
from oma_host.providers.base import ProviderError
from oma_host.providers.eventstream import EventStreamDecoder, encode_message

URL_IMAGE = {"type": "url", "media_type": "image/png", "url": "https://example.invalid/a.png"}
B64 = {"type": "base64", "media_type": "image/png", "data": "AAAA"}


def test_gemini_sends_back_the_ids_gemini_gave_and_none_it_did_not() -> None:
    given = gemini.from_wire_part({"functionCall": {"id": "fc-7", "name": "f", "args": {"a": 1}}})
    made_up = gemini.from_wire_part({"functionCall": {"name": "g"}})
    assert given is not None and made_up is not None
    assert given["id"] == "fc-7" and made_up["id"].startswith("gemini_call_")
    assert made_up["input"] == {}
    conversation: list[Any] = [
        {"role": "assistant", "content": [given, made_up]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "fc-7", "content": "one"},
                {
                    "type": "tool_result",
                    "tool_use_id": made_up["id"],
                    "content": [{"type": "text", "text": "two"}, {"type": "image", "source": B64}],
                },
            ],
        },
    ]
    wire = gemini.to_wire_contents(conversation)
    assert wire[0]["parts"] == [
        {"functionCall": {"name": "f", "args": {"a": 1}, "id": "fc-7"}},
        {"functionCall": {"name": "g", "args": {}}},
    ]
    assert wire[1]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"output": "one"}, "id": "fc-7"}},
        {
            "functionResponse": {
                "name": "g",
                "response": {"output": "two"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}],
            }
        },
    ]


@pytest.mark.parametrize(
    ("block", "match"),
    [
        ({"type": "image", "source": URL_IMAGE}, "by URL"),
        ({"type": "reasoning", "text": "", "redactedData": "x"}, "redacted reasoning"),
        ({"type": "audio"}, "'audio'"),
        ({"type": "tool_result", "tool_use_id": "nope", "content": "x"}, "answers no tool_use"),
    ],
)
def test_gemini_refuses_what_it_cannot_carry(block: dict[str, Any], match: str) -> None:
    with pytest.raises(ProviderError, match=match) as raised:
        gemini.to_wire_contents([{"role": "user", "content": [block]}])
    assert "messages[0].content[0]" in str(raised.value)
    assert raised.value.kind == "unsupported_block"


def test_gemini_error_bodies_and_usage() -> None:
    response = httpx.Response(429)
    body = {"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}}
    assert gemini.read_error(response, json.dumps(body).encode()) == (
        "Quota exceeded (RESOURCE_EXHAUSTED)",
        "provider",
    )
    assert gemini.read_error(httpx.Response(502), b"<html>bad gateway</html>") == (
        "<html>bad gateway</html>",
        "provider",
    )
    assert gemini.usage_of(
        {
            "promptTokenCount": 1000,
            "cachedContentTokenCount": 800,
            "candidatesTokenCount": 10,
            "thoughtsTokenCount": 90,
            "toolUsePromptTokenCount": 5,
        }
    ) == {
        "input_tokens": 205,
        "output_tokens": 100,
        "cache_read_input_tokens": 800,
        "reasoning_tokens": 90,
    }


def test_a_blocked_gemini_prompt_is_a_clear_failure() -> None:
    state = gemini._StreamState()
    with pytest.raises(ProviderError, match=r"blocked \(SAFETY\)"):
        state.feed({"promptFeedback": {"blockReason": "SAFETY"}})


def test_bedrock_maps_documents_and_refuses_what_it_cannot_carry() -> None:
    pdf = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}
    block = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "file", "filename": "Q3 report (final).v2.pdf", "source": pdf}],
    }
    wire = bedrock.to_wire_block(block, "here")
    assert wire["toolResult"]["content"] == [
        {
            "document": {
                "format": "pdf",
                "name": "Q3 report (final)-v2-pdf",
                "source": {"bytes": "JVBERi0="},
            }
        }
    ]
    for bad, match in (
        ({"type": "image", "source": URL_IMAGE}, "by URL"),
        ({"type": "image", "source": {**B64, "media_type": "image/tiff"}}, "image/tiff"),
        ({"type": "video"}, "'video'"),
    ):
        with pytest.raises(ProviderError, match=match):
            bedrock.to_wire_block(bad, "messages[0].content[0]")


def test_bedrock_error_types_come_from_the_header_or_the_body() -> None:
    header = httpx.Response(
        403, headers={"x-amzn-errortype": "UnrecognizedClientException:http://internal.amazon.com/"}
    )
    assert bedrock_reply.read_error(header, b'{"message":"The security token is invalid."}') == (
        "UnrecognizedClientException: The security token is invalid.",
        "auth",
    )
    body = b'{"__type":"com.amazon.coral.availability#ThrottlingException","Message":"slow"}'
    assert bedrock_reply.read_error(httpx.Response(429), body) == (
        "ThrottlingException: slow",
        "provider",
    )
    assert bedrock_reply.read_error(httpx.Response(500), b"") == ("(empty body)", "provider")


def frames(*events: tuple[dict[str, str], dict[str, Any]]) -> list[Any]:
    data = b"".join(encode_message(h, json.dumps(p).encode()) for h, p in events)
    return EventStreamDecoder().feed(data)


def test_a_bedrock_stream_exception_fails_with_its_type_and_status() -> None:
    state = bedrock_reply.StreamState()
    start = {":message-type": "event", ":event-type": "messageStart"}
    throttled = {":message-type": "exception", ":exception-type": "throttlingException"}
    first, second = frames((start, {"role": "assistant"}), (throttled, {"message": "Too fast"}))
    assert state.feed(first) == []
    with pytest.raises(ProviderError) as raised:
        state.feed(second)
    assert str(raised.value) == "bedrock: ThrottlingException: Too fast"
    assert raised.value.status_code == 429 and raised.value.kind == "provider"


def test_bedrock_thinking_for_a_model_without_a_mapping_for_budgets() -> None:
    config = AgentConfig(name="a", model="m", thinking={"budgetTokens": 2000})
    with pytest.raises(ProviderError, match="Claude models only"):
        bedrock.thinking_request_fields(config, "meta.llama4-maverick-17b-instruct-v1:0", None)
    fields, limit = bedrock.thinking_request_fields(config, "anthropic.claude-opus-4-1", None)
    assert fields == {"thinking": {"type": "enabled", "budget_tokens": 2000}} and limit == 6096
