"""A host client for the relay benchmarks that costs less per message than the
host it measures.

:class:`~oma_host.cli.client.HostClient` reads each frame with two awaits on
its stream (``read_frames``: the headers, then the body), about 10 µs of CPU
per ``$/progress`` in the benchmark's process: as much as the host spends
relaying a delta. :class:`FastHostClient` is the same client with a reader
that takes whatever the pipe holds and parses every complete frame of it in
one loop, then dispatches each message exactly as ``HostClient`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oma_host.cli.client import HostClient

_READ_SIZE = 1 << 20
_HEAD = b"Content-Length: "  # how the host frames every message: this header alone
_LENGTH = b"content-length:"
# json.loads's own scanner: the value at an index and where it ends.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class FrameError(Exception):
    """The host wrote something that is not an LSP-framed JSON message."""


def _frame_at(data: bytes, start: int) -> tuple[int, int] | None:
    """Where the body of the frame at ``start`` begins and ends, or None when
    its header block has not all arrived."""
    end = data.find(b"\r\n\r\n", start)
    if end < 0:
        return None
    head = data[start:end]
    if head.startswith(_HEAD) and head[len(_HEAD) :].isdigit():  # the usual frame
        return end + 4, end + 4 + int(head[len(_HEAD) :])
    for line in head.split(b"\r\n"):
        if line[: len(_LENGTH)].lower() == _LENGTH:
            return end + 4, end + 4 + int(line[len(_LENGTH) :])
    raise FrameError(f"a header block without Content-Length: {head!r}")


def parse_frames(buffer: bytearray) -> list[Any]:
    """Take every complete frame off the front of ``buffer`` and return its
    JSON message, in order; a frame still arriving stays in ``buffer``."""
    data = bytes(buffer)
    # Byte offsets are character offsets in ASCII text: the messages are
    # then read from one decoded string by the JSON scanner, without a slice
    # and a decode per message.
    text = data.decode("ascii") if data.isascii() else None
    messages: list[Any] = []
    start = 0
    while (frame := _frame_at(data, start)) is not None:
        body, end = frame
        if end > len(data):
            break
        message, stop = (None, -1)
        if text is not None and text[body : body + 1] == "{":
            message, stop = _scan_json(text, body)
        if stop != end:  # not ASCII, or not one object from first byte to last
            message = json.loads(data[body:end])
        messages.append(message)
        start = end
    del buffer[:start]
    return messages


class FastHostClient(HostClient):
    """:class:`HostClient` with the batch reader of the module docstring."""

    async def _read(self) -> None:
        buffer = bytearray()
        try:
            while chunk := await self.reader.read(_READ_SIZE):
                buffer += chunk
                for message in parse_frames(buffer):
                    if isinstance(message, dict):
                        self._dispatch(message)
        finally:
            self._fail_pending()
