"""AWS event-stream framing, which Bedrock's ConverseStream answers in: decoded and encoded.

Decoded incrementally as bytes arrive, every message's CRCs checked; encoded
for the provider simulator.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any

_PRELUDE = struct.Struct(">III")
_PRELUDE_SIZE = _PRELUDE.size
_MIN_MESSAGE = _PRELUDE_SIZE + 4
# AWS caps a message at 16 MiB of payload and 128 KiB of headers.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024 + 128 * 1024 + _MIN_MESSAGE
_STRING = 7


class EventStreamError(Exception):
    """Bytes that are not a valid event stream (a bad CRC, a bad length, a cut)."""


@dataclass(frozen=True)
class EventMessage:
    headers: dict[str, Any]
    payload: bytes


def _crc(data: bytes | bytearray | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _headers(data: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    at = 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode()
            at += 1 + size
            kind = data[at]
            at += 1
            value: Any
            if kind in (0, 1):
                value = kind == 0
            elif kind == 2:
                value = struct.unpack_from(">b", data, at)[0]
                at += 1
            elif kind == 3:
                value = struct.unpack_from(">h", data, at)[0]
                at += 2
            elif kind == 4:
                value = struct.unpack_from(">i", data, at)[0]
                at += 4
            elif kind in (5, 8):  # a long, or a timestamp in milliseconds
                value = struct.unpack_from(">q", data, at)[0]
                at += 8
            elif kind in (6, _STRING):
                length = struct.unpack_from(">H", data, at)[0]
                raw = data[at + 2 : at + 2 + length]
                if len(raw) != length:
                    raise EventStreamError("a header value runs past the headers")
                value = raw.decode() if kind == _STRING else raw
                at += 2 + length
            elif kind == 9:
                value = uuid.UUID(bytes=data[at : at + 16])
                at += 16
            else:
                raise EventStreamError(f"header {name!r} has the unknown value type {kind}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as error:
        raise EventStreamError(f"the headers are malformed: {error}") from None
    if at != len(data):
        raise EventStreamError("a header runs past the headers")
    return headers


class EventStreamDecoder:
    """Feed bytes as they arrive; get each message once all its bytes have.

    A feed parses in place at an offset and keeps only the unfinished tail,
    so a chunk holding many messages costs no copy per message."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> list[EventMessage]:
        buffer = self._pending + data if self._pending else bytes(data)
        view = memoryview(buffer)
        messages: list[EventMessage] = []
        at, size = 0, len(buffer)
        while size - at >= _PRELUDE_SIZE:
            total, headers_size, prelude_crc = _PRELUDE.unpack_from(buffer, at)
            if _crc(view[at : at + 8]) != prelude_crc:
                raise EventStreamError("the prelude CRC does not match")
            if not _MIN_MESSAGE + headers_size <= total <= MAX_MESSAGE_BYTES:
                raise EventStreamError(
                    f"a message of {total} bytes with {headers_size} bytes of headers"
                )
            if size - at < total:
                break
            end = at + total
            (message_crc,) = struct.unpack_from(">I", buffer, end - 4)
            if _crc(view[at : end - 4]) != message_crc:
                raise EventStreamError("the message CRC does not match")
            start = at + _PRELUDE_SIZE
            headers = _headers(buffer[start : start + headers_size])
            messages.append(EventMessage(headers, buffer[start + headers_size : end - 4]))
            at = end
        self._pending = buffer[at:]
        return messages

    def finish(self) -> None:
        """At the end of the stream: nothing may be left half-read."""
        if self._pending:
            raise EventStreamError(f"the stream ended {len(self._pending)} bytes into a message")


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One message with string headers (all Bedrock sends)."""
    encoded = b"".join(
        struct.pack(">B", len(name.encode()))
        + name.encode()
        + struct.pack(">BH", _STRING, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )
    total = _MIN_MESSAGE + len(encoded) + len(payload)
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", _crc(prelude)) + encoded + payload
    return head + struct.pack(">I", _crc(head))
