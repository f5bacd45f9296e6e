"""The providers' HTTP client: httpx's, keeping no cookies, on the aiohttp
transport (``providers/aiohttp_transport.py``) unless the settings choose
httpx's own, trusting the certificates of ``providers/tls.py``, with proxies
from the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``,
``NO_PROXY``, read by httpx), and the settings' limits and timeouts.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import httpx

from oma_host.providers.http_settings import HttpSettings
from oma_host.providers.tls import trust_context

TransportFactory = Callable[
    [ssl.SSLContext, httpx.Limits, httpx.Proxy | None], httpx.AsyncBaseTransport
]


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        """Keep nothing."""


_NO_COOKIES = _NoCookies()


class ProviderClient(httpx.AsyncClient):
    """httpx's client, keeping no cookies, on the transport ``factory`` makes
    (one direct, one per proxy), or on httpx's own when it is None.

    API providers authenticate every request by its key; one cookie jar for
    every agent and session of the host would carry one account's cookies
    into another's requests, and reading each response's cookies costs about
    5% of a request's time."""

    def __init__(self, factory: TransportFactory | None, **options: Any) -> None:
        self._factory = factory  # read by httpx's __init__, through the two hooks below
        super().__init__(**options)

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("the providers' HTTP client keeps no cookies")

    # httpx builds its transports through these two hooks (the one direct,
    # one per proxy it finds in the environment), always with keywords.
    def _init_transport(self, *args: Any, **options: Any) -> httpx.AsyncBaseTransport:
        if self._factory is None or options.get("transport") is not None:
            return super()._init_transport(*args, **options)
        return self._factory(options["verify"], options["limits"], None)

    def _init_proxy_transport(
        self, proxy: httpx.Proxy, *args: Any, **options: Any
    ) -> httpx.AsyncBaseTransport:
        if self._factory is None:
            return super()._init_proxy_transport(proxy, *args, **options)
        return self._factory(options["verify"], options["limits"], proxy)


def build_client(settings: HttpSettings) -> httpx.AsyncClient:
    """A new client with these settings."""
    factory: TransportFactory | None = None
    if settings.transport == "aiohttp":
        # Imported here, on the first provider request: aiohttp takes ~0.1 s to load.
        from oma_host.providers.aiohttp_transport import GatedAiohttpTransport

        factory = GatedAiohttpTransport
    return ProviderClient(
        factory,
        timeout=httpx.Timeout(
            connect=settings.connect_timeout_ms / 1000,
            read=settings.read_timeout_ms / 1000,
            write=settings.write_timeout_ms / 1000,
            pool=settings.pool_timeout_ms / 1000,
        ),
        limits=httpx.Limits(
            max_connections=settings.max_connections,
            max_keepalive_connections=settings.max_keep_alive_connections,
        ),
        verify=trust_context(),
    )
