"""The aiohttp transport's own response reading: ``aread`` takes a plain body
in one call from aiohttp, leaving the response as httpx's reading chunk by
chunk does (content, byte count, closed, consumed, its connection slot given
back); a compressed body goes through httpx's decoding."""

from __future__ import annotations

import asyncio
import gzip
import ssl
from collections.abc import AsyncIterator

import httpx
import pytest

from oma_host.providers.aiohttp_transport import GatedAiohttpTransport

BODY = b'{"answer": "' + b"x" * 200_000 + b'"}'  # several network reads


async def _serve(answer: bytes, keep_alive: bool = True) -> tuple[asyncio.Server, str]:
    """A server giving ``answer`` to every request; without ``keep_alive`` it
    closes the connection after its answer."""

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            writer.write(answer)
            await writer.drain()
            if not keep_alive:
                break
        writer.close()

    server = await asyncio.start_server(reply, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


def _answer(body: bytes, *headers: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n" % len(body)
    return head + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + body


@pytest.fixture
async def transport() -> AsyncIterator[GatedAiohttpTransport]:
    limits = httpx.Limits(max_connections=2)
    gated = GatedAiohttpTransport(ssl.create_default_context(), limits)
    yield gated
    await gated.aclose()


async def _get(gated: GatedAiohttpTransport, url: str) -> httpx.Response:
    request = httpx.Request("GET", url, extensions={"timeout": httpx.Timeout(5).as_dict()})
    return await gated.handle_async_request(request)


async def test_aread_matches_reading_the_stream_chunk_by_chunk(
    transport: GatedAiohttpTransport,
) -> None:
    server, url = await _serve(_answer(BODY, b"content-type: application/json"))
    try:
        whole = await _get(transport, url)
        assert await whole.aread() == BODY
        assert whole.is_closed and whole.is_stream_consumed
        assert whole.num_bytes_downloaded == len(BODY)
        assert whole.content == BODY and whole.json()["answer"] == "x" * 200_000
        assert await whole.aread() == BODY  # read once, kept
        assert b"".join([chunk async for chunk in whole.aiter_bytes()]) == BODY

        chunked = await _get(transport, url)
        parts = [chunk async for chunk in chunked.aiter_bytes()]
        assert b"".join(parts) == BODY and chunked.is_closed
        assert chunked.num_bytes_downloaded == len(BODY)
        with pytest.raises(httpx.StreamConsumed):
            await chunked.aread()
        with pytest.raises(httpx.StreamConsumed):
            await anext(chunked.aiter_bytes())
        lines = await _get(transport, url)  # httpx's text and line readers sit on aiter_bytes
        assert "".join([line async for line in lines.aiter_lines()]) == BODY.decode()
        closed = await _get(transport, url)
        await closed.aclose()
        with pytest.raises(httpx.StreamClosed):
            await anext(closed.aiter_bytes())
        # Every slot came back: two more requests fit the limit of two at once.
        held = [await _get(transport, url), await _get(transport, url)]
        for response in held:
            await response.aclose()
    finally:
        server.close()


async def test_a_compressed_body_is_decoded_by_httpx(transport: GatedAiohttpTransport) -> None:
    packed = gzip.compress(BODY)
    server, url = await _serve(_answer(packed, b"content-encoding: gzip"))
    try:
        response = await _get(transport, url)
        assert await response.aread() == BODY
        assert response.num_bytes_downloaded == len(packed)  # httpx counts the raw bytes
        assert response.is_closed
        streamed = await _get(transport, url)
        assert b"".join([chunk async for chunk in streamed.aiter_bytes()]) == BODY
        assert streamed.is_closed
    finally:
        server.close()


async def test_a_body_cut_short_is_a_protocol_error_and_gives_its_slot_back(
    transport: GatedAiohttpTransport,
) -> None:
    cut = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this"
    server, url = await _serve(cut, keep_alive=False)
    try:
        for _ in range(3):  # more than the two slots: each failure gave its slot back
            response = await _get(transport, url)
            with pytest.raises(
                httpx.RemoteProtocolError, match="Response payload is not completed"
            ):
                await response.aread()
            await response.aclose()
    finally:
        server.close()


async def test_the_response_has_httpx_s_attributes_and_its_headers_when_read(
    transport: GatedAiohttpTransport,
) -> None:
    """The response is filled in as httpx's constructor fills it, but for
    the headers, built from aiohttp's on first use: in order, duplicates kept."""
    answer = _answer(b"{}", b"Content-Type: application/json", b"x-dup: 1", b"X-Dup: 2")
    server, url = await _serve(answer)
    try:
        response = await _get(transport, url)
        raw = [
            (b"content-length", b"2"),
            (b"Content-Type", b"application/json"),
            (b"x-dup", b"1"),
            (b"X-Dup", b"2"),
        ]
        expected = httpx.Response(
            200,
            headers=raw,
            stream=response.stream,
            request=response.request,
            extensions=response.extensions,
        )
        lazy = {"_headers", "_raw_headers"}
        assert vars(response).keys() - lazy | {"headers"} == vars(expected).keys()
        for name in vars(expected).keys() - {"headers"}:
            assert getattr(response, name) == getattr(expected, name), name
        assert response.http_version == "HTTP/1.1" and response.reason_phrase == "OK"
        assert response.headers.raw == raw
        assert response.headers.get_list("x-dup") == ["1", "2"]
        assert response.headers is response.headers  # built once
        assert await response.aread() == b"{}" and response.json() == {}
        response.headers = httpx.Headers({"a": "b"})  # settable, as httpx's
        assert response.headers.raw == [(b"a", b"b")]
    finally:
        server.close()


async def _heads(
    gated: GatedAiohttpTransport, headers: list[list[tuple[bytes, bytes]]]
) -> list[bytes]:
    """The request heads a server got for requests with these headers, each sent twice."""
    heads: list[bytes] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
                await reader.readexactly(2)
            except asyncio.IncompleteReadError:
                break
            heads.append(head)
            writer.write(_answer(b"{}"))
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(record, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        for items in headers:
            for _ in range(2):
                request = httpx.Request(
                    "POST",
                    url,
                    headers=items,
                    content=b"{}",
                    extensions={"timeout": httpx.Timeout(5).as_dict()},
                )
                response = await gated.handle_async_request(request)
                await response.aread()
    finally:
        server.close()
    return heads


async def test_headers_go_out_decoded_as_a_whole_as_httpx_decodes_them(
    transport: GatedAiohttpTransport,
) -> None:
    """The transport keeps headers it decoded for later requests; a request
    with a header that is not UTF-8 still has all its headers read as
    Latin-1, those decoded before included, as on its first sending."""
    utf8 = (b"x-utf", "é".encode())
    latin1 = (b"x-raw", b"caf\xe9")
    heads = await _heads(transport, [[utf8], [utf8, latin1], [utf8]])
    assert len(heads) == 6
    assert heads[0] == heads[1] and heads[4] == heads[0]
    assert b"\r\nx-utf: \xc3\xa9\r\n" in heads[0]
    assert heads[2] == heads[3]
    assert b"\r\nx-utf: \xc3\x83\xc2\xa9\r\n" in heads[2]  # "é" read as Latin-1, sent as UTF-8
    assert b"\r\nx-raw: caf\xc3\xa9\r\n" in heads[2]
