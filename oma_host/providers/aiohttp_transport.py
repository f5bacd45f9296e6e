"""httpx over aiohttp: the providers' transport unless ``http.transport`` is ``"httpx"``.

httpx stays the interface (requests, retries, SSE) and aiohttp moves the bytes,
because httpx's own pool does not keep up with hundreds of concurrent requests
(``bench/concurrency.py`` measures both). The promises httpx's transport keeps
are kept here: a pool timeout of its own, an upload (write) timeout aiohttp
lacks, errors mapped to httpx's, and no cookies. Proxies are the client's
(:mod:`.proxies`).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any

import aiohttp
import httpx
import yarl

from oma_host.providers.httpx_internals import LazyResponse, WholeBody

# A body up to _ONE_WRITE goes out in one non-blocking write; a longer one
# in chunks of _UPLOAD_CHUNK, each timed (see the module docstring).
_ONE_WRITE = 64 * 1024
_UPLOAD_CHUNK = 1024 * 1024
_NO_TIMEOUTS: dict[str, float | None] = {}
# Bounds the aiohttp URLs kept (one per provider URL the client sends to).
_MAX_URLS = 256
# Bounds the header items kept decoded (a few per provider URL and key).
_MAX_HEADERS = 1024
# Bounds the response extensions kept, one per reason phrase a server sends.
_MAX_REASONS = 64

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


class _Slots(asyncio.Semaphore):
    """The transport's connection slots."""

    def take_free(self) -> bool:
        """Take a slot if one is free and nobody waits for one, as
        :meth:`acquire` does without waiting; False if it would wait.
        (:meth:`locked` builds a generator on every call to look for
        waiters: this is per request.)"""
        if self._value <= 0 or self._waiters:
            return False  # acquire decides, in the order it keeps
        self._value -= 1
        return True


class _Body(WholeBody):
    """An aiohttp response's body as httpx's stream; closing it gives the
    connection back to aiohttp's pool (or closes it, if the body was not read
    to the end) and the request's slot back to the transport."""

    __slots__ = ("_response", "_slots", "plain")

    def __init__(self, response: aiohttp.ClientResponse, slots: _Slots) -> None:
        self._response = response
        self._slots: _Slots | None = slots
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
            slots, self._slots = self._slots, None
            if slots is not None:
                slots.release()


class GatedAiohttpTransport(httpx.AsyncBaseTransport):
    """httpx requests sent by aiohttp, with the pool and upload timeouts and
    the error mapping described in the module docstring."""

    def __init__(
        self, verify: ssl.SSLContext, limits: httpx.Limits, proxy: httpx.Proxy | None = None
    ) -> None:
        self._ssl = verify
        self._limits = limits
        self._slots = _Slots(limits.max_connections or 1_000_000)
        self._session: aiohttp.ClientSession | None = None
        # aiohttp's keywords for the proxy, none without one (the keywords
        # left out are at their defaults: binding each costs a request some
        # time, twice).
        self._proxy_options: dict[str, Any] = {}
        if proxy is not None:
            self._proxy_options = {
                "proxy": str(proxy.url),
                "proxy_auth": aiohttp.BasicAuth(proxy.auth[0], proxy.auth[1])
                if proxy.auth
                else None,
                "proxy_headers": list(proxy.headers.items()),
            }
        # One aiohttp timeout per distinct (connect, read) pair: every request
        # of the client has the same ones.
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}
        # The URL aiohttp would parse from each httpx URL, by its text.
        self._urls: dict[str, yarl.URL] = {}
        # Each header item of httpx's as text, as the requests' UTF-8 headers
        # were decoded: the client's requests share all theirs but the length.
        self._decoded: dict[tuple[bytes, bytes], tuple[str, str]] = {}
        # The response extensions for each reason phrase.
        self._extensions: dict[str, dict[str, bytes]] = {}

    def _new_session(self) -> aiohttp.ClientSession:
        connector = aiohttp.TCPConnector(
            limit=self._limits.max_connections or 0,
            keepalive_timeout=self._limits.keepalive_expiry,
            ssl=self._ssl,
        )
        # No compression either way: httpx decodes a compressed answer, and
        # the providers' requests go out as they are.
        return aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            auto_decompress=False,
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts: dict[str, float | None] = request.extensions.get("timeout", _NO_TIMEOUTS)
        slots = self._slots
        if not slots.take_free():
            await self._wait_for_slot(timeouts.get("pool"))
        try:
            try:
                data = request.content
            except httpx.RequestNotRead:  # a streamed body: aiohttp sends its length or chunks
                response = await self._send_timed(request, timeouts, None)
            else:
                if len(data) > _ONE_WRITE:
                    response = await self._send_timed(request, timeouts, data)
                else:
                    # A body of one chunk goes out in one non-blocking write
                    # (aiohttp waits for the socket only past 64 KiB): nothing to time.
                    try:
                        response = await self._call(request, timeouts, self._headers(request), data)
                    except aiohttp.ClientError as error:
                        raise _mapped(error) from None
        except BaseException:
            slots.release()
            raise
        return LazyResponse(
            response.status,
            response.raw_headers,
            _Body(response, slots),
            request,
            self._extensions_for(response),
        )

    def _headers(self, request: httpx.Request) -> list[tuple[str, str]]:
        """The request's headers as aiohttp takes them, in order."""
        items = request.headers.raw
        known = self._decoded
        try:
            return [known.get(item) or self._decode(item) for item in items]
        except UnicodeDecodeError:  # as httpx decodes headers that are not UTF-8
            return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in items]

    def _decode(self, item: tuple[bytes, bytes]) -> tuple[str, str]:
        """A header as text, kept for the next request (but a length, which
        changes with every body); a bounded number are kept."""
        pair = (item[0].decode(), item[1].decode())
        if item[0].lower() != b"content-length" and len(self._decoded) < _MAX_HEADERS:
            self._decoded[item] = pair
        return pair

    def _extensions_for(self, response: aiohttp.ClientResponse) -> dict[str, bytes]:
        reason = response.reason or ""
        extensions = self._extensions.get(reason)
        if extensions is None:
            extensions = {"http_version": b"HTTP/1.1"}
            if reason:
                extensions["reason_phrase"] = reason.encode()
            if len(self._extensions) < _MAX_REASONS:
                self._extensions[reason] = extensions
        return extensions  # httpx's Response copies it

    async def _wait_for_slot(self, pool_s: float | None) -> None:
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

    def _url(self, url: httpx.URL) -> yarl.URL | str:
        """The URL aiohttp would parse from ``url``'s text, parsed once (or
        the text, for aiohttp to refuse as it does)."""
        text = str(url)
        kept = self._urls.get(text)
        if kept is not None:
            return kept
        key = text
        if "@" in text and url.userinfo:
            # Credentials in the URL are httpx's to send (its auth layer made
            # them an Authorization header); aiohttp refuses a URL with them
            # next to that header.
            text = str(url.copy_with(username=None, password=None))
        try:
            parsed = yarl.URL(text)  # as aiohttp parses a URL given as text
        except ValueError:
            return text
        if len(self._urls) >= _MAX_URLS:
            self._urls.clear()
        self._urls[key] = parsed
        return parsed

    def _call(
        self,
        request: httpx.Request,
        timeouts: dict[str, float | None],
        headers: list[tuple[str, str]],
        data: bytes | AsyncIterator[bytes],
    ) -> Awaitable[aiohttp.ClientResponse]:
        """aiohttp's request for ``request``, to await (the session reads
        no compressed bodies itself)."""
        session = self._session
        if session is None:
            session = self._session = self._new_session()
        options = self._proxy_options
        server_hostname = request.extensions.get("sni_hostname")
        if server_hostname is not None:
            options = {**options, "server_hostname": server_hostname}
        return session.request(
            request.method,
            self._url(request.url),
            headers=headers,
            data=data or None,
            allow_redirects=False,
            timeout=self._timeout(timeouts.get("connect"), timeouts.get("read")),
            **options,
        )

    async def _send_timed(
        self, request: httpx.Request, timeouts: dict[str, float | None], data: bytes | None
    ) -> aiohttp.ClientResponse:
        """Send a body over ``_ONE_WRITE`` (``data``), or a streamed one
        (None), in chunks under the upload clock."""
        clock = _UploadClock(timeouts.get("write"))
        headers = self._headers(request)
        if data is None:
            assert isinstance(request.stream, httpx.AsyncByteStream)
            headers = [item for item in headers if item[0].lower() != "transfer-encoding"]
            upload = _upload(request.stream, clock)
        else:
            upload = _upload(data, clock)
        try:
            async with asyncio.timeout(None) as deadline:
                clock.deadline = deadline
                try:
                    return await self._call(request, timeouts, headers, upload)
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
