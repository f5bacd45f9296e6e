"""The providers' cheap request building (``ProviderClient.prepare``) makes
exactly the request httpx's ``build_request`` makes: same method, URL,
headers in the same order, body and timeouts; requests it cannot send
directly (credentials in the URL, a scheme that is not http(s)) go through
httpx's ``send``, and the direct path uses the transport the client's router picks."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from oma_host.providers.http_client import Body, ProviderClient, build_client
from oma_host.providers.http_settings import HttpSettings

URL = "http://127.0.0.1:8123/v1/messages"
KEY = {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"}

CASES: list[tuple[str, str, dict[str, str], Body]] = [
    ("POST", URL, KEY, {"model": "m", "messages": [{"role": "user", "content": "héllo ✓"}]}),
    ("POST", URL, KEY, {"nested": {"list": [1, 2.5, None, True]}, "empty": {}}),
    ("POST", "https://api.example.com:8443/v1/chat?x=1&y=%20", KEY, {"a": 1}),
    ("POST", URL, {"Content-Type": "application/x-amz-json-1.1"}, b'{"signed": true}'),
    ("POST", URL, {"authorization": "AWS4 ...", "x-amz-date": "20260101T000000Z"}, b"\x00\xff"),
    ("POST", URL, {}, b""),
    ("POST", URL, {}, None),
    ("GET", "https://generativelanguage.googleapis.com/v1beta/models?pageSize=1000", KEY, None),
    # The caller's own values for httpx's defaults and content headers win.
    ("POST", URL, {"accept": "text/event-stream", "User-Agent": "mine"}, {"stream": True}),
    ("POST", URL, {"content-type": "application/json; charset=utf-8"}, {"a": "b"}),
    ("POST", URL, {"Content-Length": "5"}, b"abc"),  # httpx keeps it: so do we
    ("POST", URL, {"Host": "other.example"}, {"a": 1}),
]


def _same(ours: httpx.Request, httpx_own: httpx.Request) -> None:
    assert ours.method == httpx_own.method
    assert ours.url == httpx_own.url
    assert ours.headers.raw == httpx_own.headers.raw
    assert ours.content == httpx_own.content
    assert ours.extensions == httpx_own.extensions
    # The direct path fills the request in itself, attribute by attribute: the
    # same attributes as httpx's constructor sets (a newer httpx that sets
    # another fails here), the same kind of stream, headers in the same state.
    assert vars(ours).keys() == vars(httpx_own).keys()
    assert type(ours.stream) is type(httpx_own.stream)
    assert vars(ours.headers) == vars(httpx_own.headers)
    assert ours.read() == httpx_own.read()
    assert [chunk for chunk in ours.stream] == [chunk for chunk in httpx_own.stream]  # type: ignore[union-attr]


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
@pytest.mark.parametrize(("method", "url", "headers", "body"), CASES)
async def test_prepare_builds_what_build_request_builds(
    transport: str, method: str, url: str, headers: dict[str, str], body: Body
) -> None:
    client = build_client(HttpSettings(transport=transport))  # type: ignore[arg-type]
    try:
        payload: dict[str, Any] = {"json": body} if isinstance(body, dict) else {"content": body}
        expected = client.build_request(method, url, headers=headers, **payload)
        for _ in range(2):  # the first builds the template, the second uses it
            request, via = client.prepare(method, url, headers, body)
            _same(request, expected)
            assert via is client.router.transport_for(expected.url)
    finally:
        await client.aclose()


async def test_bodies_of_other_lengths_reuse_the_template_with_their_own_length() -> None:
    client = build_client(HttpSettings())
    try:
        for body in ({"a": "x"}, {"a": "x" * 1000}, {"a": "é" * 70_000}):
            request, _ = client.prepare("POST", URL, KEY, body)
            _same(request, client.build_request("POST", URL, headers=KEY, json=body))
        for data in (b"x", b"y" * 100_000):
            request, _ = client.prepare("POST", URL, KEY, data)
            _same(request, client.build_request("POST", URL, headers=KEY, content=data))
    finally:
        await client.aclose()


@pytest.mark.parametrize(("method", "url", "headers", "body"), CASES)
async def test_requests_httpx_sends_itself_are_built_as_build_request_builds_them(
    method: str, url: str, headers: dict[str, str], body: Body
) -> None:
    """The path through ``send`` (here for credentials in the URL) gets the
    encoded body: ``json=`` is rebuilt from it, headers in httpx's order."""
    client = build_client(HttpSettings())
    try:
        with_credentials = url.replace("://", "://user:secret@")
        payload: dict[str, Any] = {"json": body} if isinstance(body, dict) else {"content": body}
        expected = client.build_request(method, with_credentials, headers=headers, **payload)
        request, via = client.prepare(method, with_credentials, headers, body)
        assert via is None
        _same(request, expected)
    finally:
        await client.aclose()


@pytest.mark.parametrize(
    "url", ["http://user:secret@127.0.0.1:8123/v1/messages", "ftp://127.0.0.1/v1/messages"]
)
async def test_urls_the_direct_path_does_not_take_go_through_httpx_send(url: str) -> None:
    """Credentials in the URL need httpx's auth layer, and a scheme httpx
    cannot send is reported by httpx itself."""
    client = build_client(HttpSettings())
    try:
        request, via = client.prepare("POST", url, KEY, {"a": 1})
        assert via is None
        _same(request, client.build_request("POST", url, headers=KEY, json={"a": 1}))
    finally:
        await client.aclose()


async def test_the_direct_path_takes_the_transport_of_the_proxy_route(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "localhost")
    client = build_client(HttpSettings())
    assert isinstance(client, ProviderClient)
    try:
        _, proxied = client.prepare("POST", URL, KEY, {"a": 1})
        _, direct = client.prepare("POST", "http://localhost:8123/v1/messages", KEY, {"a": 1})
        assert proxied is not None and direct is not None and proxied is not direct
        assert proxied is client.router.transport_for(httpx.URL(URL))
        assert direct is client.router.direct
    finally:
        await client.aclose()


async def test_a_closed_client_refuses_to_send_as_httpx_does() -> None:
    client = build_client(HttpSettings())
    request, via = client.prepare("POST", URL, KEY, {"a": 1})
    await client.aclose()
    with pytest.raises(RuntimeError, match="client has been closed"):
        await client.dispatch(request, via)
    with pytest.raises(RuntimeError, match="client has been closed"):
        await client.send(request)


async def test_a_client_with_work_for_send_sends_through_it() -> None:
    """Auth, event hooks or redirect following are send's to do: with any of
    them the direct path steps aside (the providers' client has none)."""
    client = build_client(HttpSettings())
    try:
        _, direct = client.prepare("POST", URL, KEY, {"a": 1})
        assert direct is not None
        client.follow_redirects = True
        _, via = client.prepare("POST", URL + "?redirects", KEY, {"a": 1})
        assert via is None
        client.follow_redirects = False
        client.auth = ("user", "secret")
        _, via = client.prepare("POST", URL + "?auth", KEY, {"a": 1})
        assert via is None
    finally:
        await client.aclose()
