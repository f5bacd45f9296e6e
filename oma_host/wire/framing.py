"""Message framing on a byte stream: LSP base protocol and newline-delimited JSON.

The readers are the project's own because docs/protocol.md, "Transport and
framing", asks for what off-the-shelf ones (pygls's) lack: a size limit on a
frame, and an answer to a frame that cannot be parsed (with the id recovered
from an oversized one). A bad message never ends the loop; only end of input
does.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Literal

from oma_host.core.errors import ErrorCode
from oma_host.wire.ids import recover_id
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES

_ID_SCAN_BYTES = 65536
_DISCARD_CHUNK = 1 << 20
# A header name (an HTTP token) followed by a colon: how an LSP client starts.
_HEADER_START = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+:")
_HEADER_NAME_MAX = 64
# A Content-Length longer than this is no size anyone sends (15 digits is
# nearly a petabyte); refusing it early also keeps ``int()`` off a number with
# thousands of digits, which it refuses by raising.
_LENGTH_DIGITS_MAX = 15
# Where a lone surrogate can hide: a JSON ``\u`` escape in D800-DFFF (UTF-8
# cannot carry one: ``parse_json`` decodes it strictly, so the bytes of an
# encoded surrogate are refused as invalid UTF-8).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

Framing = Literal["lsp", "ndjson"]
FramingChoice = Literal["lsp", "ndjson", "auto"]


@dataclass
class Frame:
    """One framed message: ``message`` when it parsed, else ``error``."""

    message: Any = None
    error: str | None = None
    # PARSE_ERROR for unparseable JSON, INVALID_REQUEST for a frame that broke
    # the framing rules.
    error_code: ErrorCode = ErrorCode.PARSE_ERROR
    recovered_id: int | str | None = None
    # An oversized frame that was a response to one of our requests: never answered.
    is_response: bool = False
    # The JSON escapes a surrogate, so a string in it may hold a lone one
    # (see :func:`lone_surrogate_at`); False rules it out cheaply.
    maybe_surrogates: bool = False


def _oversized(what: str, size: int, limit: int, head: bytes, tail: bytes) -> Frame:
    """The answer to a frame or line over ``--max-message-bytes``, already discarded."""
    recovered, is_response = recover_id(head, tail)
    return Frame(
        error=f"the {what} is {size} bytes, over the limit of {limit} "
        "(--max-message-bytes); it was discarded",
        error_code=ErrorCode.INVALID_REQUEST,
        recovered_id=recovered,
        is_response=is_response,
    )


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# NaN and Infinity are not JSON; accepting them would put them on stdout. Built
# once: ``json.loads`` with any option builds a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_no_constants)


def parse_json(body: bytes, what: str = "frame") -> Frame:
    # As json.loads reads bytes (it tells UTF-16 and UTF-32 from UTF-8), except
    # that UTF-8 is decoded strictly: json.loads passes encoded surrogates.
    encoding = json.detect_encoding(body)
    utf8 = encoding.startswith("utf-8")
    try:
        message = _DECODER.decode(body.decode(encoding, "strict" if utf8 else "surrogatepass"))
    except UnicodeDecodeError as error:
        return Frame(error=f"the {what} is not valid UTF-8: {error.reason} at byte {error.start}")
    except json.JSONDecodeError as error:
        return Frame(error=f"the {what} is not valid JSON: {error.msg} at byte {error.pos}")
    except RecursionError:
        return Frame(error=f"the {what}'s JSON is nested too deeply to parse")
    except ValueError as error:  # NaN/Infinity, an integer beyond Python's digit limit
        return Frame(error=f"the {what} is not valid JSON: {error}")
    # A backslash is found at memchr speed; only then is the escape searched for.
    # UTF-16 and UTF-32 can carry a lone surrogate raw: those are searched.
    maybe_surrogates = not utf8 or (b"\\" in body and _SURROGATE_ESCAPE.search(body) is not None)
    return Frame(message=message, maybe_surrogates=maybe_surrogates)


async def _read_headers(
    reader: asyncio.StreamReader, prefix: bytes = b""
) -> tuple[int | None, str | None] | None:
    """Read one header block. Returns (content_length, problem), or None at end of input.

    ``prefix`` is the start of the first line, already taken from ``reader``."""
    length: int | None = None
    problem: str | None = None
    seen_any = False
    while True:
        try:
            line = prefix + await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:
            if not (prefix + error.partial).strip() and not seen_any:
                return None
            return (None, "the input ended inside a header block")
        except asyncio.LimitOverrunError as error:
            await reader.readexactly(error.consumed)  # drop the overlong line piecewise
            problem = "a header line is too long"
            prefix = b""
            continue
        prefix = b""
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
            text = value.strip()
            if text.isdigit() and len(text) <= _LENGTH_DIGITS_MAX:
                length = int(text)
            else:
                length = None
                problem = problem or (
                    f"Content-Length {text[:40]!r} is not a length "
                    f"(a decimal number of at most {_LENGTH_DIGITS_MAX} digits)"
                )


async def read_frames(
    reader: asyncio.StreamReader,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    prefix: bytes = b"",
    *,
    discard_oversized: bool = True,
) -> AsyncGenerator[Frame, None]:
    """Yield LSP-framed messages until end of input (``prefix``: see :func:`detect_framing`).

    An oversized frame is read and dropped, and reading goes on; with
    ``discard_oversized`` False it is reported unread and reading stops (the
    caller closes the connection: a client that has not authenticated)."""
    while True:
        headers = await _read_headers(reader, prefix)
        prefix = b""
        if headers is None:
            return
        length, problem = headers
        if length is None:
            yield Frame(error=problem or "a header block without Content-Length")
            continue
        if length > max_message_bytes:
            if not discard_oversized:
                yield _oversized("frame", length, max_message_bytes, b"", b"")
                return
            head, tail = await _discard(reader, length)
            yield _oversized("frame", length, max_message_bytes, head, tail)
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


# -- newline-delimited JSON ---------------------------------------------------


async def read_lines(
    reader: asyncio.StreamReader,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    prefix: bytes = b"",
    *,
    discard_oversized: bool = True,
) -> AsyncGenerator[Frame, None]:
    """Yield one message per line until end of input; blank lines are skipped.

    A line longer than ``max_message_bytes`` is read and discarded piecewise
    (never held whole) and reported like an oversized LSP frame; with
    ``discard_oversized`` False, reported as soon as it is over, and reading
    stops (see :func:`read_frames`)."""
    while True:
        line = await _read_line(reader, max_message_bytes, prefix, discard_oversized)
        prefix = b""
        if line is None:
            return
        body, size, head, tail = line
        if body is None:
            yield _oversized("line", size, max_message_bytes, head, tail)
            if not discard_oversized:
                return
        elif body.strip():
            yield parse_json(body, "line")


async def _read_line(
    reader: asyncio.StreamReader, limit: int, prefix: bytes, discard: bool = True
) -> tuple[bytes | None, int, bytes, bytes] | None:
    """One line without its terminator, as (body, size, head, tail); body is None
    when the line was over ``limit`` (head and tail then hold its ends, to find
    the id; unless ``discard``, the rest of the line is left unread). None at
    end of input."""
    parts = [prefix] if prefix else []
    size = len(prefix)
    head = tail = b""
    discarding = False
    while True:
        ended = True
        try:
            chunk = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as error:
            chunk = error.partial
            if not chunk and not size:
                return None
        except asyncio.LimitOverrunError as error:
            # No newline within the reader's buffer limit: take what is there, go on.
            chunk = await reader.readexactly(error.consumed)
            ended = False
        size += len(chunk)
        if discarding:
            tail = (tail + chunk)[-_ID_SCAN_BYTES:]
        else:
            parts.append(chunk)
            if size > limit + 2:  # over the limit even without its line terminator
                whole = b"".join(parts)
                head, tail, parts, discarding = (
                    whole[:_ID_SCAN_BYTES],
                    whole[-_ID_SCAN_BYTES:],
                    [],
                    True,
                )
                if not discard:
                    return (None, size, head, tail)
        if ended:
            break
    if discarding:
        return (None, size, head, tail)
    body = b"".join(parts).rstrip(b"\r\n")
    if len(body) > limit:
        return (None, len(body), body[:_ID_SCAN_BYTES], body[-_ID_SCAN_BYTES:])
    return (body, len(body), b"", b"")


def encode_line(body: bytes) -> bytes:
    """One ndjson message; ``json.dumps`` escapes every newline inside the body."""
    return body + b"\n"


# -- choosing the framing -------------------------------------------------------


async def detect_framing(reader: asyncio.StreamReader) -> tuple[Framing, bytes]:
    """Pick the framing from the first bytes of input: a header line
    (``Content-Length:``, any header name and a colon) means LSP; anything else
    (``{``, ``[``, or text a person typed) means ndjson. Returns the framing and
    the bytes already consumed after leading whitespace, which the reader must
    be given as ``prefix``. At end of input the answer is LSP, with no prefix."""
    taken = b""
    while True:
        byte = await reader.read(1)
        if not byte:
            return ("lsp", taken)
        if not taken and byte.isspace():
            continue  # leading blank lines are ignored by both framings
        taken += byte
        if _HEADER_START.fullmatch(taken):
            return ("lsp", taken)
        if not _HEADER_START.fullmatch(taken + b":") or len(taken) > _HEADER_NAME_MAX:
            return ("ndjson", taken)


def frame_reader(
    framing: Framing,
    reader: asyncio.StreamReader,
    max_message_bytes: int,
    prefix: bytes = b"",
    *,
    discard_oversized: bool = True,
) -> AsyncGenerator[Frame, None]:
    """The message reader for ``framing`` (``discard_oversized``: see :func:`read_frames`)."""
    read = read_lines if framing == "ndjson" else read_frames
    return read(reader, max_message_bytes, prefix, discard_oversized=discard_oversized)


def frame_encoder(framing: Framing) -> Callable[[bytes], bytes]:
    """How a JSON body is framed on the way out, for ``framing``."""
    return encode_line if framing == "ndjson" else encode_frame


# -- lone surrogates ---------------------------------------------------------

# Where a value is: the keys and indices from its root.
Location = tuple[int | str, ...]


def lone_surrogate_at(value: Any) -> Location | None:
    """Where in ``value`` the first string (or object key) holding a lone
    UTF-16 surrogate is, or None. JSON can write one (``"\\ud800"``) but no
    UTF-8 text holds it, so it could be sent nowhere (a provider, a process,
    the store): the door refuses it where params and answers are read."""
    stack: list[tuple[Any, Location]] = [(value, ())]
    while stack:  # iterative: params may nest as deep as the parser allows
        item, location = stack.pop()
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return location
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if _LONE_SURROGATE.search(key):
                    return location
                stack.append((child, (*location, key)))
        elif isinstance(item, list):
            stack.extend((item[index], (*location, index)) for index in reversed(range(len(item))))
    return None


# A surrogate pair in JSON decodes to one character, so any surrogate left is lone.
_LONE_SURROGATE = re.compile("[\\ud800-\\udfff]")


def surrogate_problem(where: str, location: Location) -> tuple[str, str]:
    """The message saying a lone surrogate is at ``location`` under ``where``
    (``agent/run: params``), and the location as a JSON path."""
    from oma_host.core.validation import json_path  # loads pydantic: only on this rare path

    return (
        f"{json_path(where, location)} holds a lone UTF-16 surrogate, "
        "which no UTF-8 text can carry",
        json_path("", location),
    )
