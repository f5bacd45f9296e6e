"""What a test scripts the provider simulator with, and what every wire format shares.

:class:`Reply` and :class:`Fault` are one queued answer each;
:class:`WireFormat` describes one provider's wire, each in its own ``wire_*``
module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Reply text holding this marker is sent with it replaced by time.perf_counter_ns()
# at the moment of the write: a benchmark in the same process measures latency.
SEND_TIME = "@send-time@"


@dataclass
class Reply:
    """One scripted model reply, rendered in the wire format of the endpoint hit.

    ``content`` uses oma-host's blocks: text, tool_use, reasoning."""

    content: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    stop_reason: str | None = None  # default: tool_use when a tool is called, else end_turn
    chunk_size: int = 8  # characters per text delta when streaming
    event_delay_s: float = 0.0  # pause between streamed events
    first_byte_delay_s: float = 0.0  # pause before the status line
    cut_after_events: int | None = None  # close the stream mid-event after this many events
    malformed: bool = False  # send a body (or an SSE event) that is not JSON
    # Anthropic's wire: end the stream after ``stream_error_after`` events with
    # an ``error`` event carrying this fault's type and message (HTTP 200).
    stream_error: Fault | None = None
    stream_error_after: int = 1
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers
    # The model the answer names (default: the one asked), as a vendor names
    # an alias's dated version; Bedrock's Converse names none either way.
    model: str | None = None

    @classmethod
    def text(cls, text: str, **options: Any) -> Reply:
        return cls(content=[{"type": "text", "text": text}], **options)


@dataclass
class Fault:
    """An HTTP error answer in the provider's error format."""

    status: int
    message: str = "simulated provider error"
    retry_after: float | str | None = None  # a str is sent as is (an HTTP date, or junk)
    error_type: str | None = None
    code: str | None = None  # OpenAI's ``error.code`` (``context_length_exceeded``)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = b""  # the body as sent (a signed request's signature covers these bytes)


def stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(b.get("type") == "tool_use" for b in reply.content) else "end_turn"


def describe_request(body: Any) -> str:
    """The default answer: what the latest user message held."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return "simulator: the request had no user message"
    content = users[-1].get("content")
    blocks: list[Any] = (
        content if isinstance(content, list) else [{"type": "text", "text": content}]
    )
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(f"text {block.get('text')!r}")
        elif kind == "image":  # Anthropic
            source = block.get("source", {})
            parts.append(f"image {source.get('media_type')} ({len(source.get('data', ''))} chars)")
        elif kind == "image_url":  # OpenAI
            url = block.get("image_url", {}).get("url", "")
            parts.append(f"image {url.split(';')[0].removeprefix('data:')} ({len(url)} chars)")
        else:
            parts.append(str(kind))
    return f"simulator saw {len(messages)} message(s); the last user message holds: " + ", ".join(
        parts
    )


def text_pieces(text: str, size: int) -> list[str]:
    """``text`` cut into deltas of ``size`` characters (one empty piece for "")."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event carrying ``data`` as JSON."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


@dataclass(frozen=True)
class StreamBody:
    """A streamed answer: its content type and its frames, in order. A ``str``
    frame is text (the server stamps :data:`SEND_TIME` in it and encodes it);
    ``bytes`` frames go out as they are (binary framings)."""

    content_type: str
    frames: list[str | bytes]


@dataclass(frozen=True)
class WireFormat:
    """One provider wire format, as the simulator serves it.

    ``matches(path)`` claims a POST; ``streams(path, body)`` says whether the
    request asks for a stream; ``model(path, body)`` names the model asked for;
    ``message`` renders a non-streaming answer, ``stream`` a streamed one,
    ``error`` a :class:`Fault` body, and ``too_long`` the provider's own
    answer to a request longer than the model's context window. ``describe``
    is the default answer's text for an unscripted request (what the latest
    user message held)."""

    name: str
    matches: Callable[[str], bool]
    message: Callable[[Reply, str, int], Any]
    stream: Callable[[Reply, str, int, Any], StreamBody]
    error: Callable[[Fault, str], Any]
    # The provider's refusal of a request of ``tokens`` over a window of
    # ``limit`` tokens, in its own words (each wire's "prompt is too long").
    too_long: Callable[[int, int], Fault]
    streams: Callable[[str, Any], bool] = lambda _path, body: (
        isinstance(body, dict) and body.get("stream") is True
    )
    model: Callable[[str, Any], str] = lambda _path, body: (
        str(body.get("model", "")) if isinstance(body, dict) else ""
    )
    describe: Callable[[Any], str] = describe_request
    # GET: the model list at ``path`` built from the simulator's model ids, or
    # None when ``path`` is not this wire's list endpoint.
    list_models: Callable[[str, list[str]], Any | None] | None = None
    # Whether a GET with these (lower-case) headers is for this wire: two wires
    # may list models at the same path (Anthropic's and OpenAI's /v1/models).
    lists_for: Callable[[dict[str, str]], bool] = lambda _headers: True


def default_error_type(fault: Fault) -> str:
    """The error type a fault's status usually carries, unless it names one."""
    return fault.error_type or {429: "rate_limit_error", 529: "overloaded_error"}.get(
        fault.status, "api_error" if fault.status >= 500 else "invalid_request_error"
    )
