"""The OpenAI Responses wire for the simulator, as OpenAI and Azure's v1 endpoint send it.

A reasoning block's id and encrypted content are its
``providerMetadata.openai``, else made up. Usage is written in oma-host's terms
and sent as OpenAI counts it, the cached tokens inside ``input_tokens``.
"""

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
    sse,
    stop_reason,
    text_pieces,
)


def _metadata(block: dict[str, Any]) -> dict[str, Any]:
    metadata = block.get("providerMetadata")
    openai = metadata.get("openai") if isinstance(metadata, dict) else None
    return openai if isinstance(openai, dict) else {}


def output_items(reply: Reply, number: int) -> list[dict[str, Any]]:
    """The reply's blocks as Responses output items, one message per text run."""
    items: list[dict[str, Any]] = []
    for index, block in enumerate(reply.content):
        kind = block.get("type")
        if kind == "text":
            items.append(
                {
                    "type": "message",
                    "id": f"msg_sim_{number}_{index}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                }
            )
        elif kind == "tool_use":
            items.append(
                {
                    "type": "function_call",
                    "id": _metadata(block).get("itemId", f"fc_sim_{number}_{index}"),
                    "call_id": block["id"],
                    "name": block["name"],
                    "arguments": json.dumps(block["input"]),
                    "status": "completed",
                }
            )
        elif kind == "reasoning":
            metadata = _metadata(block)
            summary = [{"type": "summary_text", "text": block["text"]}] if block["text"] else []
            items.append(
                {
                    "type": "reasoning",
                    "id": metadata.get("itemId", f"rs_sim_{number}_{index}"),
                    "summary": summary,
                    "encrypted_content": metadata.get("encryptedContent", f"enc:{block['text']}"),
                }
            )
    return items


def _usage(reply: Reply) -> dict[str, Any]:
    cached = reply.usage.get("cache_read_input_tokens", 0)
    uncached = reply.usage.get("input_tokens", 0)
    output = reply.usage.get("output_tokens", 0)
    return {
        "input_tokens": uncached + cached,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reply.usage.get("reasoning_tokens", 0)},
        "total_tokens": uncached + cached + output,
    }


def response_object(
    reply: Reply, model: str, number: int, output: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    incomplete = stop_reason(reply) == "max_tokens"
    return {
        "id": f"resp_sim_{number}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "error": None,
        "model": model,
        "output": output_items(reply, number) if output is None else output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
        "usage": _usage(reply),
    }


def response_events(reply: Reply, model: str, number: int) -> Iterator[dict[str, Any]]:
    """The stream of one response, in the order OpenAI sends it (without
    ``sequence_number``, which :func:`responses_stream` adds)."""
    start = response_object(reply, model, number, output=[])
    start["status"], start["usage"], start["incomplete_details"] = "in_progress", None, None
    yield {"type": "response.created", "response": start}
    yield {"type": "response.in_progress", "response": start}
    items = output_items(reply, number)
    for index, item in enumerate(items):
        at = {"output_index": index, "item_id": item["id"]}
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "status": "in_progress", "content": []},
            }
            part = {"type": "output_text", "text": "", "annotations": []}
            yield {"type": "response.content_part.added", **at, "content_index": 0, "part": part}
            for piece in text_pieces(text, reply.chunk_size):
                yield {
                    "type": "response.output_text.delta",
                    **at,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": [],
                }
            yield {
                "type": "response.output_text.done",
                **at,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
            yield {
                "type": "response.content_part.done",
                **at,
                "content_index": 0,
                "part": item["content"][0],
            }
        elif kind == "function_call":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "arguments": "", "status": "in_progress"},
            }
            for piece in text_pieces(item["arguments"], reply.chunk_size):
                yield {"type": "response.function_call_arguments.delta", **at, "delta": piece}
            yield {
                "type": "response.function_call_arguments.done",
                **at,
                "arguments": item["arguments"],
            }
        else:
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "summary": [], "encrypted_content": None},
            }
            for summary_index, summary in enumerate(item["summary"]):
                part = {"type": "summary_text", "text": ""}
                yield {
                    "type": "response.reasoning_summary_part.added",
                    **at,
                    "summary_index": summary_index,
                    "part": part,
                }
                for piece in text_pieces(summary["text"], reply.chunk_size):
                    yield {
                        "type": "response.reasoning_summary_text.delta",
                        **at,
                        "summary_index": summary_index,
                        "delta": piece,
                    }
                yield {
                    "type": "response.reasoning_summary_text.done",
                    **at,
                    "summary_index": summary_index,
                    "text": summary["text"],
                }
                yield {
                    "type": "response.reasoning_summary_part.done",
                    **at,
                    "summary_index": summary_index,
                    "part": summary,
                }
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    final = response_object(reply, model, number, output=items)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield {"type": kind, "response": final}


def responses_stream(reply: Reply, model: str, number: int, _body: Any) -> StreamBody:
    frames: list[str | bytes] = [
        sse({**event, "sequence_number": sequence}, event["type"])
        for sequence, event in enumerate(response_events(reply, model, number))
    ]
    if reply.malformed:
        frames.insert(min(2, len(frames)), "event: response.in_progress\ndata: {not json\n\n")
    return StreamBody("text/event-stream", frames)


def responses_error(fault: Fault, _path: str) -> Any:
    return {
        "error": {
            "message": fault.message,
            "type": default_error_type(fault),
            "param": "input" if fault.code == "context_length_exceeded" else None,
            "code": fault.code,
        }
    }


def responses_too_long(_tokens: int, _limit: int) -> Fault:
    """The Responses API's 400 for input over the model's window."""
    message = (
        "Your input exceeds the context window of this model. Please adjust your input "
        "and try again."
    )
    return Fault(400, message, error_type="invalid_request_error", code="context_length_exceeded")


def describe_responses(body: Any) -> str:
    """The default answer: what the latest user message of ``input`` held."""
    items = body.get("input", []) if isinstance(body, dict) else []
    if isinstance(items, str):
        items = [{"role": "user", "content": [{"type": "input_text", "text": items}]}]
    users = [i for i in items if isinstance(i, dict) and i.get("role") == "user"]
    if not users:
        return "simulator: the request had no user message"
    parts: list[str] = []
    for part in users[-1].get("content") or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "input_text":
            parts.append(f"text {part.get('text')!r}")
        elif part.get("type") == "input_image":
            url = str(part.get("image_url", ""))
            parts.append(f"image {url.split(';')[0].removeprefix('data:')} ({len(url)} chars)")
        else:
            parts.append(str(part.get("type")))
    return f"simulator saw {len(items)} input item(s); the last user message holds: " + ", ".join(
        parts
    )


def openai_model_list(path: str, models: list[str]) -> Any | None:
    """``GET .../models`` as OpenAI (and Azure's v1 endpoint) answer it."""
    if not path.endswith("/models"):
        return None
    return {
        "object": "list",
        "data": [
            {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "simulator"}
            for model in models
        ],
    }


WIRE = WireFormat(
    name="openai-responses",
    matches=lambda path: path.endswith("/responses"),
    message=response_object,
    stream=responses_stream,
    error=responses_error,
    too_long=responses_too_long,
    describe=describe_responses,
    list_models=openai_model_list,
)
