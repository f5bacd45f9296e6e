"""Server-sent events for the streaming adapters: one parser over ``response.aiter_bytes()``.

It parses exactly what httpx-sse 0.4 parses (a hypothesis test holds it so),
but a chunk's events are parsed in one loop and handed over as one list:
httpx-sse's nested async generators and per-line calls cost more CPU per delta
than anything else the host does.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from oma_host.providers.base import ProviderError
from oma_host.providers.http import parse_event_json

# json.loads's own scanner: the value at an index and where it ends.
_scan_json: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class ServerSentEvent:
    """One dispatched event: its name (``message`` when none was given), its
    data lines joined, the last event id seen, and its ``retry`` if set."""

    __slots__ = ("data", "event", "id", "retry")

    def __init__(self, event: str | None, data: str, id: str, retry: int | None) -> None:
        self.event = event or "message"
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return (
            f"ServerSentEvent(event={self.event!r}, data={self.data!r}, "
            f"id={self.id!r}, retry={self.retry!r})"
        )


# The usual event, whole: an optional ``event`` line, one ``data`` line and
# the blank line that dispatches it, read as the line-by-line path reads them
# (one space after the colon dropped, the rest of the line kept).
_USUAL_EVENT = re.compile(r"(?:event: ([^\n]*+)\n)?data: ([^\n]*+)\n\n")


class SSEParser:
    """Incremental: :meth:`feed` text as it arrives, :meth:`close` at the end;
    each returns the events completed by what it was given.

    Only a blank line completes an event, so the text after the last blank
    line is kept as it came, unread, until a blank line follows: an event cut
    by the network is then read whole. Whole usual events (``_USUAL_EVENT``)
    are read with one regex match each while no event is half-read; anything
    else goes line by line (:meth:`_lines`) up to the blank line that ends it."""

    def __init__(self) -> None:
        # The text after the last blank line, in pieces: no event ends in it.
        self._pending: list[str] = []
        self._cr = False  # the text so far ended in \r: a \n next belongs to it
        self._event = ""
        self._data: list[str] = []
        self._id = ""
        self._retry: int | None = None

    def feed(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if self._cr:
            text = "\r" + text
            self._cr = False
        if text[-1] == "\r":  # may be the first half of \r\n: decided by the next text
            self._cr = True
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        pending = self._pending
        # A blank line here: in the text, or its first \n right after a line end.
        if "\n\n" not in text and not (
            text[:1] == "\n" and (not pending or pending[-1][-1:] == "\n")
        ):
            if text:
                pending.append(text)  # joined once, when an event ends
            return []
        if pending:
            pending.append(text)
            text = "".join(pending)
            self._pending = []
        events: list[ServerSentEvent] = []
        match = _USUAL_EVENT.match
        find = text.find
        position = 0  # always at the start of a line
        length = len(text)
        while position < length:
            if not (self._event or self._data or self._retry is not None):
                # Between events: take a usual one whole.
                usual = match(text, position)
                if usual is not None:
                    events.append(ServerSentEvent(usual[1], usual[2], self._id, None))
                    position = usual.end()
                    continue
            # Else line by line, through the next blank line: at this line's
            # start, or after a line end (split hands it over as "").
            if text[position] == "\n":
                stop = position
            else:
                stop = find("\n\n", position)
                if stop < 0:
                    break
                stop += 1
            self._lines(text[position:stop].split("\n"), events)
            position = stop + 1
        if position < length:
            self._pending.append(text[position:])
        return events

    def close(self) -> list[ServerSentEvent]:
        """The body ended: the lines kept are read, the one still open as if
        ended (a blank one dispatches); an event not ended by a blank line is
        dropped."""
        lines = "".join(self._pending).split("\n")
        self._pending = []
        last = lines.pop()  # after the last line end: the line still open
        if last or self._cr:  # a \r at the very end ended it
            lines.append(last)
        self._cr = False
        events: list[ServerSentEvent] = []
        self._lines(lines, events)
        return events

    def _lines(self, lines: list[str], events: list[ServerSentEvent]) -> None:
        """Ended lines, in order; the events they dispatch are added to ``events``."""
        data = self._data
        for line in lines:
            # The usual lines first, read as the general case below reads them.
            if line[:6] == "data: ":
                data.append(line[6:])
                continue
            if line[:7] == "event: ":
                self._event = line[7:]
                continue
            if not line:
                if self._event or data or self._id or self._retry is not None:
                    events.append(
                        ServerSentEvent(self._event, "\n".join(data), self._id, self._retry)
                    )
                    # The last event id is kept, as the SSE specification says.
                    self._event = ""
                    data = self._data = []
                    self._retry = None
                continue
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":
                data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                if "\0" not in value:
                    self._id = value
            elif name == "retry":
                with contextlib.suppress(ValueError):  # not an integer: ignored
                    self._retry = int(value)
            # Anything else, comments (no name: the line starts with ":")
            # included, is ignored.


def _check_content_type(response: httpx.Response, provider: str) -> None:
    content_type = response.headers.get("content-type", "").partition(";")[0]
    if "text/event-stream" not in content_type:
        raise ProviderError(
            f"{provider}: Expected response header Content-Type to contain "
            f"'text/event-stream', got {content_type!r}",
            kind="malformed",
        )


async def sse_batches(
    response: httpx.Response, provider: str
) -> AsyncIterator[list[ServerSentEvent]]:
    """The events of ``response``, a list per network chunk that completed any.

    A response that is not ``text/event-stream`` is a ProviderError of kind
    ``malformed`` (raised when iteration starts, before the body is read)."""
    _check_content_type(response, provider)
    decoder = codecs.getincrementaldecoder(response.encoding or "utf-8")(errors="replace")
    parser = SSEParser()
    async for chunk in response.aiter_bytes():
        events = parser.feed(decoder.decode(chunk))
        if events:
            yield events
    events = parser.feed(decoder.decode(b"", True))
    events += parser.close()
    if events:
        yield events


def event_json(data: str, provider: str) -> Any:
    """An event's data as JSON: :func:`parse_event_json` (``json.loads``),
    with its two whitespace scans and three calls skipped when the data is one
    JSON value from its first character to its last, as an event's data
    nearly always is. Anything else takes ``json.loads``'s own path, errors
    included."""
    try:
        value, end = _scan_json(data, 0)
    except (StopIteration, ValueError):
        return parse_event_json(data, provider)
    if end != len(data):
        return parse_event_json(data, provider)
    return value
