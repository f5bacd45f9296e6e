"""The host's one HTTP client, and the retry policy every provider shares.

One ``httpx.AsyncClient`` per host process pools connections to each provider.
:func:`open_response` POSTs JSON and retries, with exponential backoff and
jitter, on connection failures and on 408, 409, 429 and 5xx (honouring
``retry-after``), never on other 4xx. An error answer becomes a
:class:`ProviderError` carrying the provider's own message and status code.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

from oma_host.providers.base import ProviderError

MAX_RETRIES = 2
_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 8.0
_RETRY_AFTER_CAP_S = 60.0
_TIMEOUT = httpx.Timeout(connect=10.0, read=300.0, write=60.0, pool=30.0)
_LIMITS = httpx.Limits(max_connections=64, max_keepalive_connections=16)

_client: httpx.AsyncClient | None = None


def shared_client() -> httpx.AsyncClient:
    """The host-wide client, created on first use."""
    global _client
    if _client is None or _client.is_closed:
        _client = httpx.AsyncClient(timeout=_TIMEOUT, limits=_LIMITS)
    return _client


async def close_shared_client() -> None:
    global _client
    if _client is not None:
        client, _client = _client, None
        await client.aclose()


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


@asynccontextmanager
async def open_response(
    url: str, headers: dict[str, str], body: dict[str, Any], *, provider: str
) -> AsyncIterator[httpx.Response]:
    """POST ``body`` and yield a 2xx response whose body is not read yet."""
    client = shared_client()
    attempt = 0
    while True:
        try:
            request = client.build_request("POST", url, headers=headers, json=body)
            response = await client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError) as error:
            if attempt < MAX_RETRIES:
                await asyncio.sleep(_backoff(attempt))
                attempt += 1
                continue
            raise ProviderError(
                f"{provider}: could not reach {request.url.host}:{request.url.port}: "
                f"{type(error).__name__}: {error}",
                kind="connection",
            ) from None
        except httpx.TimeoutException as error:
            raise ProviderError(
                f"{provider}: the request timed out ({error})", kind="timeout"
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:  # a bad baseURL or scheme
            raise ProviderError(
                f"{provider}: the request to {url} failed: {type(error).__name__}: {error}",
                kind="connection",
            ) from None
        if response.status_code < 400:
            break
        data = await response.aread()
        await response.aclose()
        if _retryable(response.status_code) and attempt < MAX_RETRIES:
            delay = _retry_after(response)
            await asyncio.sleep(delay if delay is not None else _backoff(attempt))
            attempt += 1
            continue
        raise ProviderError(f"{provider}: {error_message(data)}", status_code=response.status_code)
    try:
        yield response
    except httpx.TimeoutException as error:
        raise ProviderError(f"{provider}: the response stalled ({error})", kind="timeout") from None
    except httpx.HTTPError as error:
        raise ProviderError(
            f"{provider}: the response was cut off: {type(error).__name__}: {error}", kind="stream"
        ) from None
    finally:
        await response.aclose()


def _loads(data: str | bytes, provider: str, what: str) -> Any:
    """JSON from a provider; anything else is a ProviderError of kind malformed."""
    try:
        return json.loads(data)
    except ValueError:
        raise ProviderError(
            f"{provider}: {what} is not valid JSON: {data[:200]!r}", kind="malformed"
        ) from None


async def read_json(response: httpx.Response, provider: str) -> Any:
    """The whole body as JSON."""
    return _loads(await response.aread(), provider, "the response")


def parse_event_json(data: str, provider: str) -> Any:
    """One streamed SSE event's data as JSON."""
    return _loads(data, provider, "a streamed event")
