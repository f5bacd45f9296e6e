"""httpx over aiohttp: the transport the providers' client runs on unless
``initializationOptions.http.transport`` is ``"httpx"``.

httpx stays the interface (requests, retries, SSE); ``httpx-aiohttp`` moves
the bytes, because httpx's own connection pool does not keep up with hundreds
of concurrent requests (bench/README.md, "Concurrency"). This module adds what
that transport lacks, so both transports keep the same promises:

- a pool timeout of its own: a semaphore of ``max_connections`` slots, one per
  request until its response is closed. aiohttp reports a pool wait and a
  connect timeout as the same error; with the wait done here, aiohttp's
  ``connect`` timeout covers DNS, TCP and TLS only.
- an upload (write) timeout, which aiohttp does not have: the body is handed
  over in 64 KiB chunks, and a provider that accepts no chunk for the write
  timeout fails the request with ``httpx.WriteTimeout``.
- errors mapped by what aiohttp raised (httpx-aiohttp 0.2 reports a refused
  connection or a server disconnect as ``httpx.ConnectTimeout``).
- no cookie jar of aiohttp's own (the client keeps no cookies at all).

Proxies (``HTTPS_PROXY``, ``NO_PROXY``...) are httpx's: it mounts one
transport per proxy, and the client (``providers/http_client.py``) makes each
of them a :class:`GatedAiohttpTransport` too.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable

import aiohttp
import httpx
from httpx_aiohttp import AiohttpTransport

_UPLOAD_CHUNK = 64 * 1024

# aiohttp's exception -> httpx's, most specific first.
_ERRORS: tuple[tuple[type[BaseException], type[httpx.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientProxyConnectionError, httpx.ProxyError),
    (aiohttp.ClientHttpProxyError, httpx.ProxyError),
    (aiohttp.NonHttpUrlClientError, httpx.UnsupportedProtocol),
    (aiohttp.InvalidUrlClientError, httpx.UnsupportedProtocol),
    (aiohttp.ClientConnectorError, httpx.ConnectError),  # refused, DNS, TLS
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),  # a body cut short
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),  # a malformed head
    (aiohttp.ClientConnectionError, httpx.ReadError),  # reset mid-request
)


def _mapped(error: Exception) -> httpx.TransportError:
    """The httpx error for what aiohttp raised (``error`` itself, or the
    cause httpx-aiohttp attached to its own mapping)."""
    cause = error.__cause__ if isinstance(error, httpx.TransportError) else error
    for aiohttp_type, httpx_type in _ERRORS:
        if isinstance(cause, aiohttp_type):
            return httpx_type(str(cause) or type(cause).__name__)
    if isinstance(error, httpx.TransportError):
        return error
    return httpx.TransportError(f"{type(error).__name__}: {error}")


class _UploadClock:
    """Cancels the send when the provider accepts no body chunk for
    ``limit_s``; the deadline is moved forward as each chunk is taken."""

    def __init__(self, limit_s: float | None) -> None:
        self.limit_s = limit_s
        self.deadline: asyncio.Timeout | None = None  # set while the send runs

    def tick(self) -> None:
        deadline = self.deadline
        if deadline is not None and self.limit_s is not None and not deadline.expired():
            deadline.reschedule(asyncio.get_running_loop().time() + self.limit_s)

    def stop(self) -> None:
        deadline = self.deadline
        if deadline is not None and not deadline.expired():
            deadline.reschedule(None)


class _Upload(httpx.AsyncByteStream):
    """The request body in chunks, each taken under the upload clock."""

    def __init__(self, body: httpx.AsyncByteStream, clock: _UploadClock) -> None:
        self._body = body
        self._clock = clock

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in self._body:
            for start in range(0, len(data), _UPLOAD_CHUNK):
                self._clock.tick()
                yield data[start : start + _UPLOAD_CHUNK]
        self._clock.stop()


class _SlotStream(httpx.AsyncByteStream):
    """A response body that gives its connection slot back when closed."""

    def __init__(self, body: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._body = body
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._body:
                yield chunk
        except (httpx.TransportError, aiohttp.ClientError) as error:
            raise _mapped(error) from None

    async def aclose(self) -> None:
        try:
            await self._body.aclose()
        except (httpx.TransportError, aiohttp.ClientError) as error:
            raise _mapped(error) from None
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class GatedAiohttpTransport(httpx.AsyncBaseTransport):
    """httpx-aiohttp's transport with the pool and upload timeouts and the
    error mapping described in the module docstring."""

    def __init__(
        self, verify: ssl.SSLContext, limits: httpx.Limits, proxy: httpx.Proxy | None = None
    ) -> None:
        self._ssl = verify
        self._limits = limits
        self._slots = asyncio.Semaphore(limits.max_connections or 1_000_000)
        self._inner = AiohttpTransport(
            verify=verify, limits=limits, proxy=proxy, client=self._new_session
        )

    def _new_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0,
            keepalive_timeout=self._limits.keepalive_expiry,
            ssl=self._ssl,
        )
        return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        await self._take_slot(timeouts.get("pool"))
        try:
            response = await self._send(request, timeouts)
        except BaseException:
            self._slots.release()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _SlotStream(response.stream, self._slots.release)
        return response

    async def _take_slot(self, pool_s: float | None) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # returns at once: a slot is free
            return
        try:
            async with asyncio.timeout(pool_s):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection") from None

    async def _send(
        self, request: httpx.Request, timeouts: dict[str, float | None]
    ) -> httpx.Response:
        # The pool wait is over; aiohttp's "connect" is left to DNS, TCP and TLS.
        request.extensions = {
            **request.extensions,
            "timeout": {**timeouts, "pool": timeouts.get("connect")},
        }
        clock = _UploadClock(timeouts.get("write"))
        stream = request.stream
        # A body of one chunk goes out in one non-blocking write (aiohttp waits
        # for the socket only past 64 KiB): nothing to time, and bytes are
        # cheaper for aiohttp to send than a stream.
        length = int(request.headers.get("content-length") or 0)
        if length > _UPLOAD_CHUNK and isinstance(stream, httpx.AsyncByteStream):
            request = httpx.Request(
                request.method,
                request.url,
                headers=request.headers,
                stream=_Upload(stream, clock),
                extensions=request.extensions,
            )
        try:
            async with asyncio.timeout(None) as deadline:
                clock.deadline = deadline
                try:
                    return await self._inner.handle_async_request(request)
                finally:
                    clock.deadline = None
        except (httpx.TransportError, aiohttp.ClientError) as error:
            raise _mapped(error) from None
        except TimeoutError:
            if deadline.expired():  # the upload clock's, not a timeout aiohttp raised
                raise httpx.WriteTimeout("the upload stalled") from None
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
