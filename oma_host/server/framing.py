"""LSP base-protocol framing: ``Content-Length: N\\r\\n\\r\\n`` + N bytes of JSON.

pygls's own reader drops a frame it cannot parse without answering and has no
size limit; PROTOCOL.md section 1 asks for both, so the reader lives here. It
yields one :class:`Frame` per message: the parsed JSON, or the reason it could
not be parsed (and, for an oversized frame, the id recovered from its head or
tail when possible). A bad frame never ends the loop; only end of input does.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_ID_SCAN_BYTES = 65536
_DISCARD_CHUNK = 1 << 20
_ID_PATTERN = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


@dataclass
class Frame:
    """One framed message: ``message`` when it parsed, else ``error``."""

    message: Any = None
    error: str | None = None
    # -32700 for unparseable JSON, -32600 for a frame that broke the framing rules.
    error_code: int = -32700
    recovered_id: int | str | None = None


def _recover_id(*chunks: bytes) -> int | str | None:
    for chunk in chunks:
        match = _ID_PATTERN.search(chunk)
        if match:
            try:
                value = json.loads(match.group(1))
            except ValueError:
                continue
            if isinstance(value, int | str):
                return value
    return None


def parse_json(body: bytes) -> Frame:
    try:
        return Frame(message=json.loads(body))
    except UnicodeDecodeError as error:
        return Frame(error=f"the frame is not valid UTF-8: {error.reason} at byte {error.start}")
    except json.JSONDecodeError as error:
        return Frame(error=f"the frame is not valid JSON: {error.msg} at byte {error.pos}")
    except RecursionError:
        return Frame(error="the frame's JSON is nested too deeply to parse")


async def _read_headers(reader: asyncio.StreamReader) -> tuple[int | None, str | None] | None:
    """Read one header block. Returns (content_length, problem), or None at end of input."""
    length: int | None = None
    problem: str | None = None
    seen_any = False
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:
            if not error.partial.strip() and not seen_any:
                return None
            return (None, "the input ended inside a header block")
        except asyncio.LimitOverrunError as error:
            await reader.readexactly(error.consumed)  # drop the overlong line piecewise
            problem = "a header line is too long"
            continue
        stripped = line.strip()
        if not stripped:
            if not seen_any:
                continue  # tolerate blank lines between frames
            return (length, problem)
        seen_any = True
        name, sep, value = stripped.partition(b":")
        if not sep:
            problem = problem or f"malformed header line {stripped[:80]!r}"
        elif name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
                if length < 0:
                    raise ValueError
            except ValueError:
                problem = problem or f"Content-Length {value.strip()[:40]!r} is not a number"


async def read_frames(
    reader: asyncio.StreamReader, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
) -> AsyncIterator[Frame]:
    """Yield frames until end of input."""
    while True:
        headers = await _read_headers(reader)
        if headers is None:
            return
        length, problem = headers
        if length is None:
            yield Frame(error=problem or "a header block without Content-Length", error_code=-32700)
            continue
        if length > max_message_bytes:
            head, tail = await _discard(reader, length)
            yield Frame(
                error=f"the frame is {length} bytes, over the limit of {max_message_bytes} "
                "(--max-message-bytes); it was discarded",
                error_code=-32600,
                recovered_id=_recover_id(head, tail),
            )
            continue
        try:
            body = await reader.readexactly(length)
        except asyncio.IncompleteReadError:
            return
        frame = parse_json(body)
        if problem and frame.error is None:
            frame = Frame(message=frame.message)  # a stray header line is harmless
        yield frame


async def _discard(reader: asyncio.StreamReader, length: int) -> tuple[bytes, bytes]:
    """Read and drop ``length`` bytes, keeping the head and tail to find the id."""
    head = b""
    tail = b""
    remaining = length
    while remaining:
        try:
            chunk = await reader.readexactly(min(remaining, _DISCARD_CHUNK))
        except asyncio.IncompleteReadError as error:
            chunk = error.partial
            remaining = len(chunk)
        if len(head) < _ID_SCAN_BYTES:
            head += chunk[: _ID_SCAN_BYTES - len(head)]
        tail = (tail + chunk)[-_ID_SCAN_BYTES:]
        remaining -= len(chunk)
        if not chunk:
            break
    return head, tail


def encode_frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
