"""The Gemini API wire for the simulator: responses, SSE chunks, errors, the model list.

A scripted reply's usage is in oma-host's terms and rendered in Gemini's, whose
counts include the cached input and leave out the thoughts.
"""

from __future__ import annotations

import re
from typing import Any

from oma_host.testing.script import (
    Fault,
    Reply,
    StreamBody,
    WireFormat,
    sse,
    stop_reason,
    text_pieces,
)

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")
_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH = {"end_turn": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS"}


def _part(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    part: dict[str, Any]
    if kind == "tool_use":
        part = {"functionCall": {"name": block["name"], "args": block["input"]}}
    elif kind == "reasoning":
        part = {"text": block["text"], "thought": True}
    elif kind == "text":
        part = {"text": block["text"]}
    else:
        part = dict(block)
    signature = (block.get("providerMetadata") or {}).get("google", {}).get("thoughtSignature")
    if signature:
        part["thoughtSignature"] = signature
    return part


def usage_metadata(usage: dict[str, int]) -> dict[str, int]:
    cached = usage.get("cache_read_input_tokens", 0)
    thoughts = usage.get("reasoning_tokens", 0)
    prompt = usage.get("input_tokens", 0) + cached
    candidates = max(0, usage.get("output_tokens", 0) - thoughts)
    data = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
    }
    if cached:
        data["cachedContentTokenCount"] = cached
    if thoughts:
        data["thoughtsTokenCount"] = thoughts
    return data


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def gemini_message(reply: Reply, model: str, number: int) -> dict[str, Any]:
    return {
        "candidates": [
            _candidate([_part(b) for b in reply.content], _FINISH.get(stop_reason(reply), "STOP"))
        ],
        "usageMetadata": usage_metadata(reply.usage),
        "modelVersion": model,
        "responseId": f"sim-{number}",
    }


def _chunk(parts: list[dict[str, Any]], model: str, number: int) -> dict[str, Any]:
    return {
        "candidates": [_candidate(parts, None)],
        "modelVersion": model,
        "responseId": f"sim-{number}",
    }


def gemini_stream(reply: Reply, model: str, number: int, _body: Any) -> StreamBody:
    """Text and thoughts in pieces (the signature on the last piece), a
    function call whole, then a last chunk with finishReason and usage."""
    chunks: list[dict[str, Any]] = []
    for block in reply.content:
        if block.get("type") in ("text", "reasoning"):
            pieces = text_pieces(block["text"], reply.chunk_size)
            for index, piece in enumerate(pieces):
                part = _part({**block, "text": piece})
                if index < len(pieces) - 1:
                    part.pop("thoughtSignature", None)
                chunks.append(_chunk([part], model, number))
        else:
            chunks.append(_chunk([_part(block)], model, number))
    last = _chunk([{"text": ""}], model, number)
    last["candidates"][0]["finishReason"] = _FINISH.get(stop_reason(reply), "STOP")
    last["usageMetadata"] = usage_metadata(reply.usage)
    chunks.append(last)
    frames: list[str | bytes] = [sse(chunk) for chunk in chunks]
    if reply.malformed:
        frames.insert(min(1, len(frames)), "data: {this is not json\n\n")
    return StreamBody("text/event-stream", frames)


def gemini_error(fault: Fault, _path: str) -> Any:
    """The error body; ``error_type`` names its status, or ``API_KEY_INVALID``
    for the 400 Gemini answers a bad key with (an ErrorInfo detail says so)."""
    if fault.error_type == "API_KEY_INVALID":
        detail = {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": "API_KEY_INVALID",
            "domain": "googleapis.com",
        }
        error = {"code": fault.status, "message": fault.message, "status": "INVALID_ARGUMENT"}
        return {"error": {**error, "details": [detail]}}
    status = fault.error_type or _STATUSES.get(
        fault.status, "INTERNAL" if fault.status >= 500 else "INVALID_ARGUMENT"
    )
    return {"error": {"code": fault.status, "message": fault.message, "status": status}}


def _model(path: str, _body: Any) -> str:
    found = _PATH.search(path.split("?", 1)[0])
    return found.group("model") if found else ""


def describe(body: Any) -> str:
    """What the latest user content held."""
    contents = body.get("contents", []) if isinstance(body, dict) else []
    users = [c for c in contents if isinstance(c, dict) and c.get("role", "user") == "user"]
    if not users:
        return "simulator: the request had no user content"
    parts: list[str] = []
    for part in users[-1].get("parts") or []:
        if not isinstance(part, dict):
            continue
        if "text" in part:
            parts.append(f"text {part['text']!r}")
        elif "inlineData" in part:
            data = part["inlineData"]
            mime = data.get("mimeType") or data.get("mime_type")  # the SDK writes snake_case
            parts.append(f"image {mime} ({len(data.get('data', ''))} chars)")
        else:
            parts.append(next(iter(part), "empty"))
    return f"simulator saw {len(contents)} message(s); the last user message holds: " + ", ".join(
        parts
    )


def gemini_models(path: str, models: list[str]) -> Any | None:
    if not path.endswith("/v1beta/models"):
        return None
    return {
        "models": [
            {
                "name": f"models/{model}",
                "displayName": model,
                "supportedGenerationMethods": ["generateContent", "countTokens"],
            }
            for model in models
        ]
    }


def gemini_too_long(tokens: int, limit: int) -> Fault:
    """Gemini's 400 for contents over the model's window."""
    message = (
        f"The input token count ({tokens}) exceeds the maximum number of tokens allowed ({limit})."
    )
    return Fault(400, message, error_type="INVALID_ARGUMENT")


WIRE = WireFormat(
    name="gemini",
    matches=lambda path: _PATH.search(path) is not None,
    message=gemini_message,
    stream=gemini_stream,
    error=gemini_error,
    too_long=gemini_too_long,
    streams=lambda path, _body: ":streamGenerateContent" in path,
    model=_model,
    describe=describe,
    list_models=gemini_models,
)
