"""The Anthropic Messages wire for the simulator: a message, its SSE events, the error body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from oma_host.testing.script import (
    Fault,
    Reply,
    StreamBody,
    WireFormat,
    default_error_type,
    sse,
    stop_reason,
    text_pieces,
)


def _anthropic_block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "reasoning":
        if block.get("redactedData"):
            return {"type": "redacted_thinking", "data": block["redactedData"]}
        return {
            "type": "thinking",
            "thinking": block["text"],
            "signature": block.get("signature", ""),
        }
    return dict(block)


def anthropic_message(reply: Reply, model: str, number: int) -> dict[str, Any]:
    return {
        "id": f"msg_sim_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [_anthropic_block(b) for b in reply.content],
        "stop_reason": stop_reason(reply),
        "stop_sequence": None,
        "usage": dict(reply.usage),
    }


def anthropic_events(reply: Reply, model: str, number: int) -> Iterator[tuple[str, Any]]:
    start = anthropic_message(reply, model, number)
    start["content"] = []
    start["stop_reason"] = None
    # The input counts (cache ones included) come first; output at message_delta.
    start["usage"] = {**reply.usage, "output_tokens": 1}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        rendered = _anthropic_block(block)
        if kind == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            for piece in text_pieces(block["text"], reply.chunk_size):
                yield "content_block_delta", _delta(index, {"type": "text_delta", "text": piece})
        elif kind == "tool_use":
            empty = {**rendered, "input": {}}
            yield "content_block_start", _block_start(index, empty)
            for piece in text_pieces(json.dumps(block["input"]), reply.chunk_size):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "input_json_delta", "partial_json": piece}),
                )
        elif rendered["type"] == "thinking":
            # As Anthropic sends it (the SDK's model requires the empty signature).
            empty_thinking = {"type": "thinking", "thinking": "", "signature": ""}
            yield "content_block_start", _block_start(index, empty_thinking)
            for piece in text_pieces(block["text"], reply.chunk_size):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "thinking_delta", "thinking": piece}),
                )
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": rendered["signature"]}),
            )
        else:
            yield "content_block_start", _block_start(index, rendered)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply), "stop_sequence": None},
            "usage": {"output_tokens": reply.usage.get("output_tokens", 0)},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def anthropic_stream(reply: Reply, model: str, number: int, _body: Any) -> StreamBody:
    frames: list[str | bytes] = [
        sse(data, name) for name, data in anthropic_events(reply, model, number)
    ]
    if reply.malformed:
        frames.insert(min(2, len(frames)), "data: {this is not json\n\n")
    if reply.stream_error is not None:
        error = sse(anthropic_error(reply.stream_error, ""), "error")
        frames = [*frames[: reply.stream_error_after], error]
    return StreamBody("text/event-stream", frames)


def anthropic_error(fault: Fault, _path: str) -> Any:
    return {"type": "error", "error": {"type": default_error_type(fault), "message": fault.message}}


def anthropic_too_long(tokens: int, limit: int) -> Fault:
    """Anthropic's 400 for a prompt over the model's window."""
    message = f"prompt is too long: {tokens} tokens > {limit} maximum"
    return Fault(400, message, error_type="invalid_request_error")


def anthropic_model_list(path: str, models: list[str]) -> Any | None:
    """``GET /v1/models`` as Anthropic answers it (one page)."""
    if path.rstrip("/") != "/v1/models":
        return None
    data = [
        {
            "type": "model",
            "id": model,
            "display_name": model.replace("-", " ").title(),
            "created_at": "2025-01-01T00:00:00Z",
        }
        for model in models
    ]
    return {
        "data": data,
        "has_more": False,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


WIRE = WireFormat(
    name="anthropic",
    matches=lambda path: path.endswith("/messages"),
    message=anthropic_message,
    stream=anthropic_stream,
    error=anthropic_error,
    too_long=anthropic_too_long,
    list_models=anthropic_model_list,
    lists_for=lambda headers: "anthropic-version" in headers,
)
