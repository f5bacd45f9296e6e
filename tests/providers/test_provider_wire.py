"""The providers' direct path (``ProviderClient.prepare`` and ``dispatch``,
with the aiohttp transport's caches warm) puts on the wire, byte for byte,
what httpx's own path (``build_request`` and ``send``) puts there through the
same transport; and ``request_json`` reads and fails as reading the whole
body of ``open_response``'s response does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_host.providers import http
from oma_host.providers.base import ProviderError
from oma_host.providers.http_client import Body, build_client
from oma_host.providers.http_settings import HttpSettings
from tests.providers.helpers import TRANSPORTS

KEY = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}

CASES: list[tuple[str, str, dict[str, str], Body]] = [
    ("POST", "/v1/messages", KEY, {"model": "m", "messages": [{"role": "user", "content": "é ✓"}]}),
    ("POST", "/v1/chat?x=1&y=%20", {"authorization": "Bearer k"}, {"a": 1.5, "b": [None, True]}),
    ("POST", "/v1/x", {"Content-Type": "application/x-amz-json-1.1"}, b'{"signed": true}'),
    ("POST", "/v1/x", {"x-amz-date": "20260101T000000Z"}, b"\x00\xff"),
    ("POST", "/v1/x", {}, b""),
    ("POST", "/v1/x", {}, None),
    ("GET", "/v1beta/models?pageSize=1000", {"x-goog-api-key": "k"}, None),
    ("POST", "/v1/x", {"accept": "text/event-stream", "User-Agent": "mine"}, {"stream": True}),
    ("POST", "/v1/x", {"content-type": "application/json; charset=utf-8"}, {"a": "b"}),
    ("POST", "/v1/x", {"Content-Length": "3"}, b"abc"),
    ("POST", "/v1/x", {"Host": "other.example"}, {"a": 1}),
    ("POST", "/v1/messages", KEY, {"big": "y" * 70_000}),  # over one upload chunk
]


class Recorder:
    """A server keeping each request's bytes, answering with ``answer``."""

    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}") -> None:
        self.answer = answer
        self.close = False  # the connection after each answer
        self.requests: list[bytes] = []
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.requests.append(head + await reader.readexactly(length))
            writer.write(self.answer)
            await writer.drain()
            if self.close:
                break
        writer.close()


@pytest.fixture
async def recorder() -> AsyncIterator[Recorder]:
    recording = Recorder()
    server = await asyncio.start_server(recording._serve, "127.0.0.1", 0)
    recording.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    yield recording
    server.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_direct_path_sends_what_httpx_sends(recorder: Recorder, transport: str) -> None:
    client = build_client(HttpSettings(transport=transport))  # type: ignore[arg-type]
    try:
        for method, path, headers, body in CASES:
            url = recorder.url + path
            for _ in range(3):  # the first builds the templates, the others use them
                request, via = client.prepare(method, url, headers, body)
                assert via is not None
                response = await client.dispatch(request, via)
                await response.aread()
                await response.aclose()
            payload: dict[str, Any] = (
                {"json": body} if isinstance(body, dict) else {"content": body}
            )
            own = client.build_request(method, url, headers=headers, **payload)
            response = await client.send(own)
            await response.aclose()
            direct, httpx_own = recorder.requests[-4:-1], recorder.requests[-1]
            assert direct == [httpx_own] * 3, (method, path)
    finally:
        await client.aclose()


@pytest.fixture
async def shared(recorder: Recorder) -> AsyncIterator[Recorder]:
    """The module's shared client, on the aiohttp transport, for this test's loop."""
    await http.close_shared_client()
    yield recorder
    await http.close_shared_client()


async def _both(url: str, provider: str = "p") -> list[Any]:
    """What request_json, and the whole body of open_response's response
    parsed as the providers parse JSON, give or raise."""
    outcomes: list[Any] = []
    for way in ("request_json", "open_response"):
        try:
            if way == "request_json":
                outcomes.append(await http.request_json(url, KEY, {"a": 1}, provider=provider))
            else:
                async with http.open_response(url, KEY, {"a": 1}, provider=provider) as response:
                    body = await response.aread()
                    outcomes.append(http._loads(body, provider, "the response"))
        except ProviderError as error:
            outcomes.append((str(error), error.kind, error.status_code))
    return outcomes


def _answer(status: bytes, body: bytes, length: int | None = None) -> bytes:
    size = len(body) if length is None else length
    return b"HTTP/1.1 %s\r\ncontent-length: %d\r\n\r\n%s" % (status, size, body)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (_answer(b"200 OK", b'{"a": [1]}'), {"a": [1]}),
        (_answer(b"200 OK", b"not json"), "malformed"),
        (_answer(b"200 OK", b'{"cut', length=50), "stream"),  # then the server closes
        (_answer(b"404 Not Found", b'{"error": {"message": "gone"}}'), "provider"),
        (_answer(b"401 Unauthorized", b"no!"), "auth"),
        # An error whose own body is cut short is still the error its status says.
        (_answer(b"403 Forbidden", b'{"error": {"mess', length=80), "auth"),
    ],
)
async def test_request_json_reads_and_fails_as_open_response_does(
    shared: Recorder, answer: bytes, expected: Any
) -> None:
    # Each answer ends its connection (a body cut short ends with it).
    shared.answer = answer.replace(b"\r\n", b"\r\nconnection: close\r\n", 1)
    shared.close = True
    first, second = await _both(shared.url + "/v1/messages")
    assert first == second
    assert first == expected if isinstance(expected, dict) else first[1] == expected
    assert len(shared.requests) == 2 and shared.requests[0] == shared.requests[1]
