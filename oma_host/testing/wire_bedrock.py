"""The Amazon Bedrock Converse wire for the simulator, streaming in event-stream framing.

Each request's raw bytes are recorded so a test can check its SigV4 signature;
the simulator does not refuse unsigned requests itself.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from oma_host.providers.eventstream import encode_message
from oma_host.testing.script import (
    Fault,
    Reply,
    StreamBody,
    WireFormat,
    stop_reason,
    text_pieces,
)

_PATH = re.compile(r"/model/(?P<model>[^/]+)/(?P<action>converse|converse-stream)$")
_ERROR_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
CONTENT_TYPE = "application/vnd.amazon.eventstream"


def _block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"text": block["text"]}
    if kind == "tool_use":
        return {
            "toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}
        }
    if kind == "reasoning":
        if block.get("redactedData"):
            return {"reasoningContent": {"redactedContent": block["redactedData"]}}
        text = {"text": block["text"]}
        if block.get("signature"):
            text["signature"] = block["signature"]
        return {"reasoningContent": {"reasoningText": text}}
    return dict(block)


def bedrock_usage(usage: dict[str, int]) -> dict[str, int]:
    data = {
        "inputTokens": usage.get("input_tokens", 0),
        "outputTokens": usage.get("output_tokens", 0),
    }
    data["totalTokens"] = data["inputTokens"] + data["outputTokens"]
    if "cache_read_input_tokens" in usage:
        data["cacheReadInputTokens"] = usage["cache_read_input_tokens"]
        data["totalTokens"] += usage["cache_read_input_tokens"]
    if "cache_creation_input_tokens" in usage:
        data["cacheWriteInputTokens"] = usage["cache_creation_input_tokens"]
        data["totalTokens"] += usage["cache_creation_input_tokens"]
    return data


def bedrock_message(reply: Reply, _model: str, _number: int) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [_block(b) for b in reply.content]}},
        "stopReason": stop_reason(reply),
        "usage": bedrock_usage(reply.usage),
        "metrics": {"latencyMs": 1},
    }


def _event(name: str, payload: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": name,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return encode_message(headers, json.dumps(payload).encode())


def bedrock_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        at = {"contentBlockIndex": index}
        if kind == "tool_use":
            start = {"toolUse": {"toolUseId": block["id"], "name": block["name"]}}
            events.append(("contentBlockStart", {**at, "start": start}))
            for piece in text_pieces(json.dumps(block["input"]), reply.chunk_size):
                events.append(("contentBlockDelta", {**at, "delta": {"toolUse": {"input": piece}}}))
        elif kind == "text":
            for piece in text_pieces(block["text"], reply.chunk_size):
                events.append(("contentBlockDelta", {**at, "delta": {"text": piece}}))
        elif kind == "reasoning" and block.get("redactedData"):
            delta = {"reasoningContent": {"redactedContent": block["redactedData"]}}
            events.append(("contentBlockDelta", {**at, "delta": delta}))
        elif kind == "reasoning":
            for piece in text_pieces(block["text"], reply.chunk_size):
                delta = {"reasoningContent": {"text": piece}}
                events.append(("contentBlockDelta", {**at, "delta": delta}))
            if block.get("signature"):
                delta = {"reasoningContent": {"signature": block["signature"]}}
                events.append(("contentBlockDelta", {**at, "delta": delta}))
        events.append(("contentBlockStop", at))
    events.append(("messageStop", {"stopReason": stop_reason(reply)}))
    events.append(("metadata", {"usage": bedrock_usage(reply.usage), "metrics": {"latencyMs": 1}}))
    return events


def bedrock_stream(reply: Reply, _model: str, _number: int, _body: Any) -> StreamBody:
    frames: list[str | bytes] = [_event(name, data) for name, data in bedrock_events(reply)]
    if reply.malformed:  # a frame whose message CRC is wrong
        broken = bytearray(_event("contentBlockDelta", {"contentBlockIndex": 0}))
        broken[-1] ^= 0xFF
        frames.insert(min(1, len(frames)), bytes(broken))
    return StreamBody(CONTENT_TYPE, frames)


def bedrock_error(fault: Fault, _path: str) -> Any:
    error_type = fault.error_type or _ERROR_TYPES.get(
        fault.status, "InternalServerException" if fault.status >= 500 else "ValidationException"
    )
    return {"__type": error_type, "message": fault.message}


def bedrock_too_long(_tokens: int, _limit: int) -> Fault:
    """Converse's ValidationException for messages over the model's window."""
    return Fault(400, "Input is too long for requested model.", error_type="ValidationException")


def _model(path: str, _body: Any) -> str:
    found = _PATH.search(path.split("?", 1)[0])
    return unquote(found.group("model")) if found else ""


def describe(body: Any) -> str:
    """What the latest user message held."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return "simulator: the request had no user message"
    parts: list[str] = []
    for block in users[-1].get("content") or []:
        if not isinstance(block, dict):
            continue
        if "text" in block:
            parts.append(f"text {block['text']!r}")
        elif "image" in block:
            image = block["image"]
            size = len(image.get("source", {}).get("bytes", ""))
            parts.append(f"image image/{image.get('format')} ({size} chars)")
        else:
            parts.append(next(iter(block), "empty"))
    return f"simulator saw {len(messages)} message(s); the last user message holds: " + ", ".join(
        parts
    )


WIRE = WireFormat(
    name="bedrock",
    matches=lambda path: _PATH.search(path) is not None,
    message=bedrock_message,
    stream=bedrock_stream,
    error=bedrock_error,
    too_long=bedrock_too_long,
    streams=lambda path, _body: path.split("?", 1)[0].endswith("/converse-stream"),
    model=_model,
    describe=describe,
)
