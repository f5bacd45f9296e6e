"""The adapters' SSE parser (:mod:`oma_host.providers.sse`) parses exactly
what httpx-sse parses, however the body is cut into network chunks."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from httpx_sse import EventSource, SSEError
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_host.providers.base import ProviderError
from oma_host.providers.http import parse_event_json
from oma_host.providers.sse import SSEParser, event_json, sse_batches

Event = tuple[str, str, str, int | None]


class _Chunks(httpx.AsyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


def _response(chunks: list[bytes], content_type: str) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": content_type}, stream=_Chunks(chunks))


async def _both(chunks: list[bytes], content_type: str) -> tuple[list[Event], list[Event]]:
    expected = [
        (e.event, e.data, e.id, e.retry)
        async for e in EventSource(_response(chunks, content_type)).aiter_sse()
    ]
    got = [
        (e.event, e.data, e.id, e.retry)
        async for batch in sse_batches(_response(chunks, content_type), "test")
        for e in batch
    ]
    return expected, got


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    return [piece for piece in pieces if piece]  # httpx never yields an empty chunk


_TEXT = st.text(alphabet=st.sampled_from("ab :é€😀\0\t"), max_size=8)
_LINE = st.one_of(
    st.builds(lambda v: f"data: {v}", _TEXT),
    st.builds(lambda v: f"data:{v}", _TEXT),
    st.just("data"),
    st.builds(lambda v: f"event: {v}", _TEXT),
    st.builds(lambda v: f"event:{v}", _TEXT),
    st.builds(lambda v: f"id: {v}", _TEXT),
    st.builds(lambda v: f"retry: {v}", st.sampled_from(["10", " 3000", "x", "", "-1", "1_0"])),
    st.builds(lambda v: f":{v}", _TEXT),  # a comment
    st.builds(lambda v: f"other: {v}", _TEXT),
    st.just(""),
    st.just(""),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.tuples(_LINE, st.sampled_from(["\n", "\r\n", "\r"])), max_size=14),
    last=st.sampled_from(["", "\n", "\r", "\r\n", "data: open", "\n\n", "\r\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_it_parses_what_httpx_sse_parses(
    lines: list[tuple[str, str]], last: str, cuts: list[int]
) -> None:
    body = ("".join(line + end for line, end in lines) + last).encode()
    expected, got = asyncio.run(_both(_cut(body, cuts), "text/event-stream"))
    assert got == expected


# Whole events as providers write them (read by the parser's regex), and
# near misses of that form (read line by line), in any order.
_BLOCK = st.one_of(
    st.builds(lambda e, d: f"event: {e}\ndata: {d}\n\n", _TEXT, _TEXT),
    st.builds(lambda d: f"data: {d}\n\n", _TEXT),
    st.builds(lambda d: f"data: {d}\r\n\r\n", _TEXT),
    st.builds(lambda e, d: f"event: {e}\ndata: {d}\ndata: {d}\n\n", _TEXT, _TEXT),
    st.builds(lambda e, d: f"data: {d}\nevent: {e}\n\n", _TEXT, _TEXT),
    st.builds(lambda e, d: f"event:{e}\ndata:{d}\n\n", _TEXT, _TEXT),
    st.builds(lambda d: f"id: {d}\ndata: {d}\n\n", _TEXT),
    st.builds(lambda d: f"retry: 5\ndata: {d}\n\n", _TEXT),
    st.builds(lambda e: f"event: {e}\n\n", _TEXT),
    st.builds(lambda e: f"event: {e}\n", _TEXT),  # an event left open by what follows
    st.builds(lambda d: f": comment {d}\n", _TEXT),
    st.just("\n"),
)


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(_BLOCK, max_size=12),
    last=st.sampled_from(["", "data: open", "data: x\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_whole_events_parse_as_httpx_sse_parses_them(
    blocks: list[str], last: str, cuts: list[int]
) -> None:
    body = ("".join(blocks) + last).encode()
    expected, got = asyncio.run(_both(_cut(body, cuts), "text/event-stream"))
    assert got == expected


class _LineByLine:
    """The plain reading the parser's shortcuts must agree with, feed by
    feed: each line as it ends, an event at each blank line."""

    def __init__(self) -> None:
        self.open = ""  # the line not ended yet
        self.cr = False
        self.fields: dict[str, str | int | None] = {"event": "", "id": "", "retry": None}
        self.data: list[str] = []

    def feed(self, text: str) -> list[Event]:
        events: list[Event] = []
        for char in text:
            if self.cr:  # a \r ended the line; a \n right after it belongs to it
                self.cr = False
                self.line(self.open, events)
                self.open = ""
                if char == "\n":
                    continue
            if char == "\r":  # decided by the next character (or the end)
                self.cr = True
            elif char == "\n":
                self.line(self.open, events)
                self.open = ""
            else:
                self.open += char
        return events

    def close(self) -> list[Event]:
        events: list[Event] = []
        if self.open or self.cr:
            self.line(self.open, events)
        return events

    def line(self, line: str, events: list[Event]) -> None:
        fields = self.fields
        if not line:
            if fields["event"] or self.data or fields["id"] or fields["retry"] is not None:
                retry = fields["retry"]
                assert retry is None or isinstance(retry, int)
                events.append(
                    (
                        str(fields["event"] or "message"),
                        "\n".join(self.data),
                        str(fields["id"]),
                        retry,
                    )
                )
                fields["event"], fields["retry"], self.data = "", None, []
            return
        name, _, value = line.partition(":")
        value = value[1:] if value[:1] == " " else value
        if name == "data":
            self.data.append(value)
        elif name == "event":
            fields["event"] = value
        elif name == "id" and "\0" not in value:
            fields["id"] = value
        elif name == "retry":
            with contextlib.suppress(ValueError):  # int() as httpx-sse reads it
                fields["retry"] = int(value)


@settings(max_examples=300, deadline=None)
@given(
    blocks=st.lists(st.one_of(_BLOCK, _LINE.map(lambda line: line + "\n")), max_size=12),
    last=st.sampled_from(["", "data: open", "data: x\n", "\r", "\n\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_each_feed_hands_over_the_events_it_completed(
    blocks: list[str], last: str, cuts: list[int]
) -> None:
    """Not one event later than a line-by-line reading hands it over, however
    the text is cut: the text kept after the last blank line never holds one."""
    body = "".join(blocks) + last
    points = sorted({cut % (len(body) + 1) for cut in cuts})
    texts = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    parser, reference = SSEParser(), _LineByLine()
    for text in texts:
        got = [(e.event, e.data, e.id, e.retry) for e in parser.feed(text)]
        assert got == reference.feed(text)
    assert [(e.event, e.data, e.id, e.retry) for e in parser.close()] == reference.close()


@settings(max_examples=200, deadline=None)
@given(
    body=st.binary(max_size=120).map(lambda b: b.replace(b"\x01", b"\n").replace(b"\x02", b"\r")),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    charset=st.sampled_from(["", "; charset=utf-8", "; charset=latin-1"]),
)
def test_any_bytes_in_any_charset(body: bytes, cuts: list[int], charset: str) -> None:
    """Not UTF-8 at all, cut inside characters: decoded and replaced alike."""
    expected, got = asyncio.run(_both(_cut(body, cuts), "text/event-stream" + charset))
    assert got == expected


def test_a_stream_of_many_events() -> None:
    events = "".join(f'event: delta\ndata: {{"n": {n}}}\n\n' for n in range(500)).encode()
    chunks = _cut(events, list(range(0, len(events), 97)))
    expected, got = asyncio.run(_both(chunks, "text/event-stream"))
    assert len(got) == 500
    assert got == expected


def test_the_parser_hands_over_the_events_each_feed_completed() -> None:
    parser = SSEParser()
    assert parser.feed("event: a\ndata: 1\n") == []
    first = parser.feed("\nevent: b\r")
    assert [(e.event, e.data) for e in first] == [("a", "1")]
    assert parser.feed("\ndata: 2\r\n\r") == []  # the \r may be half of \r\n
    assert [(e.event, e.data) for e in parser.close()] == [("b", "2")]


def test_a_response_that_is_not_an_event_stream() -> None:
    async def read(content_type: str) -> str:
        with pytest.raises(SSEError) as theirs:
            async for _ in EventSource(_response([b"{}"], content_type)).aiter_sse():
                pass
        with pytest.raises(ProviderError) as ours:
            async for _ in sse_batches(_response([b"{}"], content_type), "anthropic"):
                pass
        assert ours.value.kind == "malformed"
        assert str(ours.value) == f"anthropic: {theirs.value}"
        return str(ours.value)

    message = asyncio.run(read("application/json; charset=utf-8"))
    assert "'application/json'" in message


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@given(
    value=_JSON,
    before=st.sampled_from(["", " ", "\n", "\ufeff"]),
    after=st.sampled_from(["", " ", "x", "}", " 1"]),
)
def test_event_json_is_json_loads(value: object, before: str, after: str) -> None:
    """The same value, or the same error, as parse_event_json (json.loads)."""
    data = before + json.dumps(value) + after
    try:
        expected: object = parse_event_json(data, "test")
    except ProviderError as error:
        with pytest.raises(ProviderError) as ours:
            event_json(data, "test")
        assert (str(ours.value), ours.value.kind) == (str(error), error.kind)
        return
    assert event_json(data, "test") == expected
