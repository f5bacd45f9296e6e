"""What ``providers/httpx_internals.py`` relies on in httpx still holds: the
response it fills in has the attributes httpx's constructor sets, and after
its one-call read it is in the state httpx's own ``aread`` leaves, as httpx's
public properties and readers see it. An httpx release that changes either
fails here."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from oma_host.providers.httpx_internals import LazyResponse, WholeBody

RAW = [(b"Content-Type", b"application/json"), (b"x-dup", b"1"), (b"X-Dup", b"2")]
BODY = b'{"answer": "' + b"x" * 5000 + b'"}'
EXTENSIONS = {"http_version": b"HTTP/1.1", "reason_phrase": b"OK"}


class Chunks(WholeBody):
    """A body in memory, in chunks or in one call; says when it was closed."""

    def __init__(self, data: bytes, plain: bool = True) -> None:
        self.data = data
        self.plain = plain
        self.reads: list[str] = []
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for start in range(0, len(self.data), 1000):
            self.reads.append("chunk")
            yield self.data[start : start + 1000]

    async def read_all(self) -> bytes:
        self.reads.append("whole")
        return self.data

    async def aclose(self) -> None:
        self.closed = True


def pair(data: bytes = BODY) -> tuple[LazyResponse, httpx.Response]:
    """The same answer as a LazyResponse and as httpx's own response."""
    request = httpx.Request("POST", "https://provider.test/v1")
    ours = LazyResponse(200, RAW, Chunks(data), request, EXTENSIONS)
    own = httpx.Response(
        200, headers=RAW, stream=Chunks(data), request=request, extensions=EXTENSIONS
    )
    return ours, own


def test_the_response_has_the_attributes_httpx_s_constructor_sets() -> None:
    ours, own = pair()
    lazy = {"_headers", "_raw_headers"}
    assert vars(ours).keys() - lazy | {"headers"} == vars(own).keys()
    for name in vars(own).keys() - {"headers", "stream"}:
        assert getattr(ours, name) == getattr(own, name), name
    assert ours.request is own.request
    assert ours.headers.raw == own.headers.raw and vars(ours.headers) == vars(own.headers)


async def test_a_plain_body_read_in_one_call_leaves_the_state_httpx_s_aread_leaves() -> None:
    ours, own = pair()
    assert await ours.aread() == await own.aread() == BODY
    assert isinstance(ours.stream, Chunks) and ours.stream.reads == ["whole"]
    assert isinstance(own.stream, Chunks) and own.stream.closed and ours.stream.closed
    assert ours.headers.raw == RAW  # built now, as httpx built its own in aread
    own_state = {k: v for k, v in vars(own).items() if k not in ("stream", "_decoder")}
    ours_state = {k: v for k, v in vars(ours).items() if k not in ("stream", "_raw_headers")}
    ours_state["headers"] = ours_state.pop("_headers")
    assert ours_state.keys() == own_state.keys()
    for name, value in own_state.items():
        assert ours_state[name] == value, name
    for response in (ours, own):
        assert response.content == BODY and response.num_bytes_downloaded == len(BODY)
        assert response.json()["answer"] == "x" * 5000
        assert await response.aread() == BODY  # read once, kept
        assert b"".join([chunk async for chunk in response.aiter_bytes()]) == BODY


async def test_a_body_with_a_content_coding_is_httpx_s_to_read() -> None:
    request = httpx.Request("GET", "https://provider.test/v1")
    stream = Chunks(BODY, plain=False)
    response = LazyResponse(200, RAW, stream, request, EXTENSIONS)
    assert await response.aread() == BODY
    assert stream.reads == ["chunk"] * 6 and response.is_closed


async def test_a_consumed_or_closed_body_fails_as_httpx_s_does() -> None:
    for close_first in (False, True):
        ours, own = pair()
        for response in (ours, own):
            if close_first:
                await response.aclose()
            else:
                [chunk async for chunk in response.aiter_bytes()]
        for response in (ours, own):
            expected = httpx.StreamClosed if close_first else httpx.StreamConsumed
            with pytest.raises(expected):
                await response.aread()
