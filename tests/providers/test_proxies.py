"""The proxy each provider request goes through, read from the environment
as httpx reads it: a proxy per scheme (``ALL_PROXY`` under the others),
``NO_PROXY`` entries as curl reads them, the most specific pattern winning;
the router hands each request to the transport of its route."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from oma_host.providers.proxies import RoutedTransport, environment_proxies

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


class Labelled(httpx.AsyncBaseTransport):
    """A transport that says which proxy it was made for, and answers so."""

    def __init__(self, proxy: httpx.Proxy | None) -> None:
        self.label = "direct" if proxy is None else str(proxy.url)
        self.closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=self.label)

    async def aclose(self) -> None:
        self.closed = True


def route(environment: dict[str, str], url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    transport = RoutedTransport(Labelled, environment_proxies()).transport_for(httpx.URL(url))
    assert isinstance(transport, Labelled)
    return transport.label


HTTP = "http://proxy-a:3128"
HTTPS = "http://proxy-b:3128"
ALL = "http://proxy-c:3128"


@pytest.mark.parametrize(
    ("environment", "url", "expected"),
    [
        ({}, "https://api.example.com/v1", "direct"),
        ({"HTTP_PROXY": HTTP}, "http://api.example.com/v1", HTTP),
        ({"HTTP_PROXY": HTTP}, "https://api.example.com/v1", "direct"),
        ({"HTTPS_PROXY": HTTPS}, "https://api.example.com/v1", HTTPS),
        ({"ALL_PROXY": ALL}, "https://api.example.com/v1", ALL),
        ({"ALL_PROXY": ALL, "HTTP_PROXY": HTTP}, "http://api.example.com/v1", HTTP),
        ({"ALL_PROXY": ALL, "HTTP_PROXY": HTTP}, "https://api.example.com/v1", ALL),
        ({"https_proxy": HTTPS}, "https://api.example.com/v1", HTTPS),  # lower case
        ({"HTTP_PROXY": "proxy-a:3128"}, "http://x.example/v1", HTTP),  # no scheme: http
        # A domain covers itself and its subdomains; a leading dot, only them.
        ({"ALL_PROXY": ALL, "NO_PROXY": "example.com"}, "https://example.com/v1", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "example.com"}, "https://api.example.com/", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "example.com"}, "https://notexample.com/", ALL),
        ({"ALL_PROXY": ALL, "NO_PROXY": ".example.com"}, "https://api.example.com/", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": ".example.com"}, "https://example.com/v1", ALL),
        # Addresses and localhost match exactly, with any port.
        ({"ALL_PROXY": ALL, "NO_PROXY": "127.0.0.1"}, "http://127.0.0.1:8123/v1", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "127.0.0.1"}, "http://127.0.0.2:8123/v1", ALL),
        ({"ALL_PROXY": ALL, "NO_PROXY": "::1"}, "http://[::1]:8123/v1", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "localhost"}, "http://localhost:8123/v1", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "localhost"}, "http://localhost.example/v1", ALL),
        # Several entries, spaces around them; "*" among them turns every proxy off.
        ({"ALL_PROXY": ALL, "NO_PROXY": "a.test, b.test"}, "https://b.test/v1", "direct"),
        ({"ALL_PROXY": ALL, "NO_PROXY": "a.test, *"}, "https://other.test/v1", "direct"),
        # An entry with a scheme is a pattern of its own: this scheme, host and port.
        (
            {"ALL_PROXY": ALL, "NO_PROXY": "http://intra.test:8080"},
            "http://intra.test:8080/v1",
            "direct",
        ),
        ({"ALL_PROXY": ALL, "NO_PROXY": "http://intra.test:8080"}, "https://intra.test/v1", ALL),
        ({"ALL_PROXY": ALL, "NO_PROXY": "http://intra.test:8080"}, "http://intra.test/v1", ALL),
    ],
)
def test_each_url_goes_through_the_proxy_httpx_would_choose(
    environment: dict[str, str], url: str, expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert route(environment, url, monkeypatch) == expected


def test_proxy_credentials_become_its_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:secret@proxy-b:3128")
    proxy = environment_proxies()["https://"]
    assert proxy is not None
    assert proxy.auth == ("user", "secret") and str(proxy.url) == HTTPS


def test_the_router_sends_through_its_route_and_closes_every_transport(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", HTTP)
    monkeypatch.setenv("HTTPS_PROXY", HTTPS)
    monkeypatch.setenv("NO_PROXY", "localhost")
    made: list[Labelled] = []

    def make(proxy: httpx.Proxy | None) -> Labelled:
        made.append(Labelled(proxy))
        return made[-1]

    async def scenario() -> list[str]:
        async with httpx.AsyncClient(transport=RoutedTransport(make, environment_proxies())) as c:
            urls = ("http://a.test/", "https://a.test/", "http://localhost:1/")
            return [(await c.get(url)).text for url in urls]

    assert asyncio.run(scenario()) == [HTTP, HTTPS, "direct"]
    assert [transport.label for transport in made] == ["direct", HTTP, HTTPS]  # one each
    assert all(transport.closed for transport in made)
