"""httpx over aiohttp: the transport the providers' client runs on unless
``initializationOptions.http.transport`` is ``"httpx"``.

httpx stays the interface (requests, retries, SSE); aiohttp moves the bytes,
because httpx's own connection pool does not keep up with hundreds of
concurrent requests (bench/README.md, "Concurrency"). The conversion both ways
is this module's own and thin: an httpx request's bytes body goes to aiohttp
as it is, and the httpx response reads aiohttp's body directly. The promises
httpx's transport keeps are kept here too:

- a pool timeout of its own: a semaphore of ``max_connections`` slots, one per
  request until its response is closed. aiohttp reports a pool wait and a
  connect timeout as the same error; with the wait done here, aiohttp's
  ``connect`` timeout covers DNS, TCP and TLS only.
- an upload (write) timeout, which aiohttp does not have: a body over 64 KiB
  is handed over in 64 KiB chunks, and a provider that accepts no chunk for
  the write timeout fails the request with ``httpx.WriteTimeout``. A smaller
  body goes out in one non-blocking write, so there is nothing to time.
- errors mapped to httpx's by what aiohttp raised.
- no cookie jar of aiohttp's own (the client keeps no cookies at all).

Proxies (``HTTPS_PROXY``, ``NO_PROXY``...) are httpx's: it mounts one
transport per proxy, and the client (``providers/http_client.py``) makes each
of them a :class:`GatedAiohttpTransport` too.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable, Iterator

import aiohttp
import httpx

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


def _mapped(error: aiohttp.ClientError) -> httpx.TransportError:
    """The httpx error for what aiohttp raised."""
    for aiohttp_type, httpx_type in _ERRORS:
        if isinstance(error, aiohttp_type):
            return httpx_type(str(error) or type(error).__name__)
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


def _chunks(data: bytes, clock: _UploadClock) -> Iterator[bytes]:
    for start in range(0, len(data), _UPLOAD_CHUNK):
        clock.tick()
        yield data[start : start + _UPLOAD_CHUNK]


async def _upload(body: bytes | httpx.AsyncByteStream, clock: _UploadClock) -> AsyncIterator[bytes]:
    """The request body in chunks, each taken under the upload clock: bytes,
    or a stream (which the providers, sending bytes, never use)."""
    if isinstance(body, bytes):
        for chunk in _chunks(body, clock):
            yield chunk
    else:
        async for data in body:
            for chunk in _chunks(data, clock):
                yield chunk
    clock.stop()


class _Body(httpx.AsyncByteStream):
    """An aiohttp response's body as httpx's stream; closing it gives the
    connection back to aiohttp's pool (or closes it, if the body was not read
    to the end) and the request's slot back to the transport."""

    __slots__ = ("_release", "_response", "plain")

    def __init__(self, response: aiohttp.ClientResponse, release: Callable[[], None]) -> None:
        self._response = response
        self._release: Callable[[], None] | None = release
        # No content coding: the bytes aiohttp reads are the body itself.
        self.plain = aiohttp.hdrs.CONTENT_ENCODING not in response.headers

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while chunk := await content.readany():
                yield chunk
        except aiohttp.ClientError as error:
            raise _mapped(error) from None

    async def read_all(self) -> bytes:
        """The rest of the body, read by aiohttp in one call."""
        try:
            return await self._response.read()
        except aiohttp.ClientError as error:
            raise _mapped(error) from None

    async def aclose(self) -> None:
        try:
            self._response.release()
            await self._response.wait_for_close()
        except aiohttp.ClientError as error:
            raise _mapped(error) from None
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class _Response(httpx.Response):
    """httpx's response, whose :meth:`aread` takes a plain body (no content
    coding) from aiohttp in one call instead of through httpx's chunk-by-chunk
    decoding pipeline: 5 µs instead of 17 µs for a small JSON answer."""

    async def aread(self) -> bytes:
        stream = self.stream
        if (
            not isinstance(stream, _Body)
            or not stream.plain  # httpx decodes it
            or hasattr(self, "_content")  # read already
            or self.is_stream_consumed  # httpx raises the error for these
            or self.is_closed
        ):
            return await super().aread()
        # What httpx's aread does for a body without content coding.
        self.is_stream_consumed = True
        content = await stream.read_all()
        self._num_bytes_downloaded = len(content)
        await self.aclose()
        self._content = content
        return content


class GatedAiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests sent by aiohttp, with the pool and upload timeouts and
    the error mapping described in the module docstring."""

    def __init__(
        self, verify: ssl.SSLContext, limits: httpx.Limits, proxy: httpx.Proxy | None = None
    ) -> None:
        self._ssl = verify
        self._limits = limits
        self._slots = asyncio.Semaphore(limits.max_connections or 1_000_000)
        self._session: aiohttp.ClientSession | None = None
        self._proxy = str(proxy.url) if proxy else None
        self._proxy_auth = (
            aiohttp.BasicAuth(proxy.auth[0], proxy.auth[1]) if proxy and proxy.auth else None
        )
        self._proxy_headers = list(proxy.headers.items()) if proxy else None
        # One aiohttp timeout per distinct (connect, read) pair: every request
        # of the client has the same ones.
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}

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
        extensions = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode()
        return _Response(
            status_code=response.status,
            headers=response.raw_headers,
            stream=_Body(response, self._slots.release),
            request=request,
            extensions=extensions,
        )

    async def _take_slot(self, pool_s: float | None) -> None:
        if not self._slots.locked():
            await self._slots.acquire()  # returns at once: a slot is free
            return
        try:
            async with asyncio.timeout(pool_s):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection") from None

    def _timeout(self, connect: float | None, read: float | None) -> aiohttp.ClientTimeout:
        timeout = self._timeouts.get((connect, read))
        if timeout is None:
            # The pool wait is over; aiohttp's "connect" is left to DNS, TCP and TLS.
            timeout = aiohttp.ClientTimeout(sock_connect=connect, sock_read=read, connect=connect)
            self._timeouts[connect, read] = timeout
        return timeout

    @staticmethod
    def _url(request: httpx.Request) -> str:
        text = str(request.url)
        if "@" in text and request.url.userinfo:
            # Credentials in the URL are httpx's to send (its auth layer made
            # them an Authorization header); aiohttp refuses a URL with them
            # next to that header.
            text = str(request.url.copy_with(username=None, password=None))
        return text

    async def _send(
        self, request: httpx.Request, timeouts: dict[str, float | None]
    ) -> aiohttp.ClientResponse:
        session = self._session
        if session is None:
            session = self._session = self._new_session()
        raw = request.headers.raw
        try:
            headers = [(name.decode(), value.decode()) for name, value in raw]
        except UnicodeDecodeError:  # as httpx decodes headers that are not UTF-8
            headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in raw]
        clock: _UploadClock | None = None
        data: bytes | AsyncIterator[bytes] | None
        try:
            data = request.content or None
        except httpx.RequestNotRead:  # a streamed body: aiohttp sends its length or chunks
            assert isinstance(request.stream, httpx.AsyncByteStream)
            headers = [item for item in headers if item[0].lower() != "transfer-encoding"]
            clock = _UploadClock(timeouts.get("write"))
            data = _upload(request.stream, clock)
        else:
            # A body of one chunk goes out in one non-blocking write (aiohttp
            # waits for the socket only past 64 KiB): nothing to time.
            if data is not None and len(data) > _UPLOAD_CHUNK:
                clock = _UploadClock(timeouts.get("write"))
                data = _upload(data, clock)
        call = session.request(
            request.method,
            self._url(request),
            headers=headers,
            data=data,
            allow_redirects=False,
            auto_decompress=False,
            compress=False,
            timeout=self._timeout(timeouts.get("connect"), timeouts.get("read")),
            server_hostname=request.extensions.get("sni_hostname"),
            proxy=self._proxy,
            proxy_auth=self._proxy_auth,
            proxy_headers=self._proxy_headers,
        )
        if clock is None:
            try:
                return await call
            except aiohttp.ClientError as error:
                raise _mapped(error) from None
        try:
            async with asyncio.timeout(None) as deadline:
                clock.deadline = deadline
                try:
                    return await call
                finally:
                    clock.deadline = None
        except aiohttp.ClientError as error:
            raise _mapped(error) from None
        except TimeoutError:
            if deadline.expired():  # the upload clock's, not a timeout aiohttp raised
                raise httpx.WriteTimeout("the upload stalled") from None
            raise

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
