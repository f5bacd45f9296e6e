"""Which proxy, if any, each provider request goes through, and the transport that takes it.

The environment's proxies are read as httpx reads them, but routed here
(:class:`RoutedTransport`) rather than through httpx's mounts, because the
client's direct path needs the transport for a URL, which httpx does not make
public.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.request import getproxies

import httpx

# Builds the transport for a proxy, or the direct one for None.
TransportMaker = Callable[[httpx.Proxy | None], httpx.AsyncBaseTransport]


def environment_proxies() -> dict[str, httpx.Proxy | None]:
    """The environment's proxies by URL pattern (``http://``,
    ``all://*example.com``...); None for the patterns reached directly."""
    found = getproxies()
    routes: dict[str, httpx.Proxy | None] = {}
    for scheme in ("http", "https", "all"):
        url = found.get(scheme)
        if url:
            routes[f"{scheme}://"] = httpx.Proxy(url if "://" in url else f"http://{url}")
    for entry in found.get("no", "").split(","):
        host = entry.strip()
        if host == "*":
            return {}
        if host:
            routes[_direct_pattern(host)] = None
    return routes


def _is_ip(host: str, version: type[ipaddress.IPv4Address | ipaddress.IPv6Address]) -> bool:
    try:
        version(host.split("/")[0])
    except ValueError:
        return False
    return True


def _direct_pattern(host: str) -> str:
    """The pattern of a ``NO_PROXY`` entry (curl's reading of it)."""
    if "://" in host:
        return host
    if _is_ip(host, ipaddress.IPv4Address) or host.lower() == "localhost":
        return f"all://{host}"
    if _is_ip(host, ipaddress.IPv6Address):
        return f"all://[{host}]"
    # ".example.com" becomes "*.example.com": its subdomains only;
    # "example.com" becomes "*example.com": the domain and its subdomains.
    return f"all://*{host}"


@dataclass(frozen=True, slots=True)
class _Pattern:
    """A URL pattern: a scheme (``all`` for any), a host (``*`` for any,
    ``*.`` or ``*`` in front for subdomains), a port."""

    scheme: str
    host: str
    port: int | None
    host_regex: re.Pattern[str] | None

    @classmethod
    def parse(cls, pattern: str) -> _Pattern:
        url = httpx.URL(pattern)
        host = "" if url.host == "*" else url.host
        regex: re.Pattern[str] | None = None
        if host.startswith("*."):
            regex = re.compile(f"^.+\\.{re.escape(host[2:])}$")
        elif host.startswith("*"):
            regex = re.compile(f"^(.+\\.)?{re.escape(host[1:])}$")
        elif host:
            regex = re.compile(f"^{re.escape(host)}$")
        return cls("" if url.scheme == "all" else url.scheme, host, url.port, regex)

    @property
    def priority(self) -> tuple[int, int, int]:
        """Sorts a port first, then the longer host, then the longer scheme."""
        return (0 if self.port is not None else 1, -len(self.host), -len(self.scheme))

    def matches(self, url: httpx.URL) -> bool:
        return (
            (not self.scheme or self.scheme == url.scheme)
            and (self.host_regex is None or self.host_regex.match(url.host) is not None)
            and (self.port is None or self.port == url.port)
        )


class RoutedTransport(httpx.AsyncBaseTransport):
    """A transport per proxy and one direct, made by ``make``; each request
    goes to the transport of the first of ``routes`` its URL matches, most
    specific first, or the direct one."""

    def __init__(self, make: TransportMaker, routes: Mapping[str, httpx.Proxy | None]) -> None:
        self.direct = make(None)
        rules = [
            (_Pattern.parse(pattern), self.direct if proxy is None else make(proxy))
            for pattern, proxy in routes.items()
        ]
        rules.sort(key=lambda rule: rule[0].priority)  # stable: equals keep their order
        self._rules = rules

    def transport_for(self, url: httpx.URL) -> httpx.AsyncBaseTransport:
        """The transport a request to ``url`` goes through."""
        for pattern, transport in self._rules:
            if pattern.matches(url):
                return transport
        return self.direct

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.transport_for(request.url).handle_async_request(request)

    async def aclose(self) -> None:
        await self.direct.aclose()
        for _, transport in self._rules:
            if transport is not self.direct:
                await transport.aclose()
