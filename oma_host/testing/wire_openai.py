"""The OpenAI Chat Completions wire for the simulator: completions, chunks, the error body."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from oma_host.testing.script import (
    Fault,
    Reply,
    StreamBody,
    WireFormat,
    default_error_type,
    stop_reason,
    text_pieces,
)
from oma_host.testing.wire_openai_responses import openai_model_list

_OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


def _openai_tool_calls(reply: Reply) -> list[dict[str, Any]]:
    """The reply's tool calls; one whose block has a Gemini thought signature
    (``providerMetadata.google.thoughtSignature``) carries it as Gemini's
    compatible endpoint does, in ``extra_content``."""
    calls = []
    for block in reply.content:
        if block.get("type") != "tool_use":
            continue
        call: dict[str, Any] = {
            "id": block["id"],
            "type": "function",
            "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
        }
        signature = block.get("providerMetadata", {}).get("google", {}).get("thoughtSignature")
        if signature is not None:
            call["extra_content"] = {"google": {"thought_signature": signature}}
        calls.append(call)
    return calls


def _openai_usage(reply: Reply) -> dict[str, Any]:
    """The reply's usage as OpenAI counts it: cached input inside the prompt
    tokens, with the details only when there are cached or reasoning tokens."""
    cached = reply.usage.get("cache_read_input_tokens", 0)
    reasoning = reply.usage.get("reasoning_tokens", 0)
    prompt = reply.usage.get("input_tokens", 0) + cached
    completion = reply.usage.get("output_tokens", 0)
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached or reasoning:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return usage


def openai_completion(reply: Reply, model: str, number: int) -> dict[str, Any]:
    text = "".join(b["text"] for b in reply.content if b.get("type") == "text")
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if tool_calls := _openai_tool_calls(reply):
        message["tool_calls"] = tool_calls
    return {
        "id": f"chatcmpl-sim-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _OPENAI_FINISH[stop_reason(reply)]}
        ],
        "usage": _openai_usage(reply),
    }


def openai_chunks(
    reply: Reply, model: str, number: int, include_usage: bool
) -> Iterator[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-sim-{number}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for block in reply.content:
        if block.get("type") == "text":
            for piece in text_pieces(block["text"], reply.chunk_size):
                yield chunk({"content": piece})
    for index, call in enumerate(_openai_tool_calls(reply)):
        function = call["function"]
        first = {**call, "index": index, "function": {"name": function["name"], "arguments": ""}}
        yield chunk({"tool_calls": [first]})
        for piece in text_pieces(function["arguments"], reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _OPENAI_FINISH[stop_reason(reply)])
    if include_usage:
        final = chunk({})
        final["choices"] = []
        final["usage"] = _openai_usage(reply)
        yield final


def openai_stream(reply: Reply, model: str, number: int, body: Any) -> StreamBody:
    options = body.get("stream_options") if isinstance(body, dict) else None
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
    frames: list[str | bytes] = [
        f"data: {json.dumps(chunk)}\n\n"
        for chunk in openai_chunks(reply, model, number, include_usage)
    ]
    frames.append("data: [DONE]\n\n")
    if reply.malformed:
        frames.insert(min(2, len(frames)), "data: {this is not json\n\n")
    return StreamBody("text/event-stream", frames)


def openai_error(fault: Fault, _path: str) -> Any:
    error = {"message": fault.message, "type": default_error_type(fault), "code": fault.code}
    if fault.code == "context_length_exceeded":
        error["param"] = "messages"
    return {"error": error}


def openai_too_long(tokens: int, limit: int) -> Fault:
    """Chat Completions' 400 for messages over the model's window."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages "
        f"resulted in {tokens} tokens. Please reduce the length of the messages."
    )
    return Fault(400, message, error_type="invalid_request_error", code="context_length_exceeded")


WIRE = WireFormat(
    name="openai",
    matches=lambda path: path.endswith("/chat/completions"),
    message=openai_completion,
    stream=openai_stream,
    error=openai_error,
    too_long=openai_too_long,
    # The same list as the Responses wire (one server has both APIs).
    list_models=openai_model_list,
)
