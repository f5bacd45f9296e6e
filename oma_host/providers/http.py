"""The host's one HTTP client, and the retry policy every provider shares.

One client per host process pools connections to each provider.
:func:`open_response` POSTs JSON and retries with backoff and jitter on
connection failures, 408, 409, 429 and 5xx (honouring ``retry-after``), never
on other 4xx. An error answer becomes a :class:`ProviderError` with the
provider's message and status; a timeout says which one fired.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx

from oma_host.core.errors import ProviderErrorKind
from oma_host.providers.base import ProviderError
from oma_host.providers.http_client import (
    Body,
    BodyKind,
    ProviderClient,
    build_client,
    encode_body,
)
from oma_host.providers.http_settings import release_http_settings, settle_http_settings

MAX_RETRIES = 2
_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 8.0
_RETRY_AFTER_CAP_S = 60.0

_client: ProviderClient | None = None
_client_loop: asyncio.AbstractEventLoop | None = None
_closer: AsyncIterator[None] | None = None


async def shared_client() -> ProviderClient:
    """The host-wide client, created on first use in each event loop (its
    connections belong to the loop: the Python API may run one loop after
    another, each ``asyncio.run`` its own)."""
    global _client, _client_loop, _closer
    loop = asyncio.get_running_loop()
    if _client is None or _client.is_closed or _client_loop is not loop:
        _client, _client_loop = build_client(settle_http_settings()), loop
        # asyncio.run finalizes the async generators left open before it closes
        # its loop; finalizing this one closes the client while the loop runs.
        _closer = _close_with_the_loop(_client)
        await anext(_closer)
    return _client


async def _close_with_the_loop(client: httpx.AsyncClient) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await client.aclose()


async def close_shared_client() -> None:
    """Close the shared client; the next one may be built with other settings."""
    global _client
    release_http_settings()
    if _client is not None:
        client, _client = _client, None
        await client.aclose()


def _host_port(url: httpx.URL) -> str:
    port = url.port or (443 if url.scheme == "https" else 80)
    return f"{url.host}:{port}"


def _timeout_message(error: httpx.TimeoutException, timeout: httpx.Timeout) -> str:
    """Which timeout fired, its value, and the option that sets it."""
    if isinstance(error, httpx.ConnectTimeout):
        which, option, seconds = "connect", "connectTimeoutMs", timeout.connect
        what = "no connection could be made"
    elif isinstance(error, httpx.PoolTimeout):
        which, option, seconds = "pool", "poolTimeoutMs", timeout.pool
        what = "every connection stayed busy (http.maxConnections)"
    elif isinstance(error, httpx.WriteTimeout):
        which, option, seconds = "write (upload)", "writeTimeoutMs", timeout.write
        what = "the provider took none of the request body"
    else:
        which, option, seconds = "read", "readTimeoutMs", timeout.read
        what = "the provider sent nothing"
    return f"the {which} timeout of {seconds:g} s (http.{option}) fired: {what} for {seconds:g} s"


def _retryable(status: int) -> bool:
    return status in (408, 409, 429) or status >= 500


def _backoff(attempt: int) -> float:
    ceiling: float = min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):  # neither seconds nor a date: ignore it
            return None
        seconds = float(parsed.timestamp() - time.time())
    return max(0.0, min(seconds, _RETRY_AFTER_CAP_S))


def error_message(body: bytes) -> str:
    """The provider's own message from an error body (both formats nest it
    under ``error.message``), else the body text."""
    text = body.decode(errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:2000] or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return text[:2000]


# Reads a provider's error answer (status, headers, body) into its message
# and error kind, for wires whose errors do not nest under ``error.message``.
ErrorReader = Callable[[httpx.Response, bytes], tuple[str, ProviderErrorKind]]


def _default_error(response: httpx.Response, data: bytes) -> tuple[str, ProviderErrorKind]:
    # 401 or 403: a refused key.
    kind: ProviderErrorKind = "auth" if response.status_code in (401, 403) else "provider"
    return error_message(data), kind


# Whether an error answer (its status, its body as JSON or None, its message)
# refuses the request for being longer than the model's context window.
TooLong = Callable[[int, Any, str], bool]


def too_long_reader(too_long: TooLong, base: ErrorReader = _default_error) -> ErrorReader:
    """``base``, with the kind ``context_too_long`` for an answer ``too_long``
    recognises (each provider says it in its own words): the LLM loop
    compacts the conversation and tries once more."""

    def read(response: httpx.Response, data: bytes) -> tuple[str, ProviderErrorKind]:
        message, kind = base(response, data)
        if kind == "provider":
            try:
                body: Any = json.loads(data)
            except ValueError:
                body = None
            if too_long(response.status_code, body, message):
                return message, "context_too_long"
        return message, kind

    return read


def _ready_client() -> ProviderClient | None:
    """The shared client if it is ready for this loop (else
    :func:`shared_client` makes it), without a coroutine per request."""
    client = _client
    if client is None or client.is_closed or _client_loop is not asyncio.get_running_loop():
        return None
    return client


async def _open(
    client: ProviderClient,
    url: str,
    headers: dict[str, str],
    data: bytes,
    kind: BodyKind,
    provider: str,
    read_error: ErrorReader,
    method: str,
) -> httpx.Response:
    """The 2xx response to the request, body unread, after the retries the
    module docstring describes."""
    attempt = 0
    while True:
        try:
            request, transport = client.prepare_encoded(method, url, headers, data, kind)
            response = await client.dispatch(request, transport)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as error:
            if attempt < MAX_RETRIES:
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            where = _host_port(request.url)
            if isinstance(error, httpx.ConnectTimeout):
                raise ProviderError(
                    f"{provider}: could not reach {where} in {attempt + 1} attempts: "
                    + _timeout_message(error, client.timeout),
                    kind="timeout",
                ) from None
            raise ProviderError(
                f"{provider}: could not reach {where}: {type(error).__name__}: {error}",
                kind="connection",
            ) from None
        except httpx.TimeoutException as error:
            raise ProviderError(
                f"{provider}: the request to {_host_port(request.url)} timed out: "
                + _timeout_message(error, client.timeout),
                kind="timeout",
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:  # a bad baseURL or scheme
            raise ProviderError(
                f"{provider}: the request to {url} failed: {type(error).__name__}: {error}",
                kind="connection",
            ) from None
        if response.status_code < 400:
            return response
        unread = ""
        try:
            answer = await response.aread()
        except httpx.HTTPError as error:
            # The error's own body was cut off or stalled: its status still
            # says what went wrong, so that is what the run reports.
            answer = b""
            unread = f" (its body could not be read: {type(error).__name__}: {error})"
        finally:
            await response.aclose()
        if _retryable(response.status_code) and attempt < MAX_RETRIES:
            delay = _retry_after(response)
            await asyncio.sleep(delay if delay is not None else _backoff(attempt))
            attempt += 1
            continue
        message, kind_of_error = read_error(response, answer)
        raise ProviderError(
            f"{provider}: {message}{unread}", status_code=response.status_code, kind=kind_of_error
        )


async def _opened(
    url: str,
    headers: dict[str, str],
    data: bytes,
    kind: BodyKind,
    provider: str,
    read_error: ErrorReader,
    method: str,
) -> tuple[ProviderClient, httpx.Response]:
    """:func:`_open` on the shared client, and the client."""
    client = _ready_client()
    if client is None:
        client = await shared_client()
    return client, await _open(client, url, headers, data, kind, provider, read_error, method)


def _body_error(error: httpx.HTTPError, provider: str, client: ProviderClient) -> ProviderError:
    """What a failure reading a 2xx response's body becomes."""
    if isinstance(error, httpx.TimeoutException):
        return ProviderError(
            f"{provider}: the response stalled: " + _timeout_message(error, client.timeout),
            kind="timeout",
        )
    return ProviderError(
        f"{provider}: the response was cut off: {type(error).__name__}: {error}", kind="stream"
    )


@asynccontextmanager
async def open_response(
    url: str,
    headers: dict[str, str],
    body: Body,
    *,
    provider: str,
    read_error: ErrorReader = _default_error,
    method: str = "POST",
) -> AsyncIterator[httpx.Response]:
    """POST ``body`` (JSON, or bytes sent as they are: a signed body) and
    yield a 2xx response whose body is not read yet; ``method="GET"`` with no
    body reads a list endpoint (``models/list``) with the same retries."""
    data, kind = encode_body(body)
    del body  # encoded once, for every attempt; the dict is not kept meanwhile
    client, response = await _opened(url, headers, data, kind, provider, read_error, method)
    try:
        yield response
    except httpx.HTTPError as error:
        raise _body_error(error, provider, client) from None
    finally:
        await response.aclose()


async def request_json(
    url: str,
    headers: dict[str, str],
    body: Body,
    *,
    provider: str,
    read_error: ErrorReader = _default_error,
    method: str = "POST",
) -> Any:
    """The whole JSON answer to ``body``, with :func:`open_response`'s
    retries and errors (a body cut off or stalled included), without an
    async generator and a context manager per request."""
    data, kind = encode_body(body)
    del body
    client, response = await _opened(url, headers, data, kind, provider, read_error, method)
    try:
        answer = await response.aread()
    except httpx.HTTPError as error:
        raise _body_error(error, provider, client) from None
    finally:
        await response.aclose()
    return _loads(answer, provider, "the response")


def _loads(data: str | bytes, provider: str, what: str) -> Any:
    """JSON from a provider; anything else is a ProviderError of kind malformed."""
    try:
        return json.loads(data)
    except ValueError:
        raise ProviderError(
            f"{provider}: {what} is not valid JSON: {data[:200]!r}", kind="malformed"
        ) from None


def parse_event_json(data: str, provider: str) -> Any:
    """One streamed SSE event's data as JSON."""
    return _loads(data, provider, "a streamed event")
