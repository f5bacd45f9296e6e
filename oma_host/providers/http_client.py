"""The providers' HTTP client: httpx's, no cookies, the chosen transport, TLS, proxies, limits.

It also owns a cheap way to build and send a request
(:meth:`ProviderClient.prepare`, :meth:`ProviderClient.dispatch`): httpx's
``build_request`` and ``send`` spend much of a request's CPU on layers a
provider's POST never needs, so the same ``Request`` is made from a per-URL
template (``tests/providers/test_http_prepare.py`` holds it equal).
"""

from __future__ import annotations

import json
import logging
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx

from oma_host.providers.http_settings import HttpSettings
from oma_host.providers.proxies import RoutedTransport, environment_proxies
from oma_host.providers.tls import trust_context
from oma_host.providers.wire_prefix import WireMessages


class TransportFactory(Protocol):
    """A transport class the client is built on: the aiohttp one, or httpx's."""

    def __call__(
        self, *, verify: ssl.SSLContext, limits: httpx.Limits, proxy: httpx.Proxy | None
    ) -> httpx.AsyncBaseTransport: ...


# A request body: JSON (a dict), bytes sent as they are, or none.
Body = dict[str, Any] | bytes | None
# What a body was, once encoded: its kind decides the content headers httpx adds.
BodyKind = Literal["json", "bytes", "empty", "none"]

# httpx logs each request at INFO under this name; the direct path does too.
_httpx_log = logging.getLogger("httpx")

# Bounds the templates kept per client (adapters send to few URLs, with fixed
# headers; a key rotated in the environment makes a new one).
_MAX_TEMPLATES = 256


class _NoCookies(httpx.Cookies):
    def extract_cookies(self, response: httpx.Response) -> None:
        """Keep nothing."""


_NO_COOKIES = _NoCookies()


# A raw header: its name as given, its value.
_Header = tuple[bytes, bytes]


@dataclass(frozen=True, slots=True)
class _Template:
    """What every request to one URL with one set of headers and one kind of
    body shares: its method and URL as httpx normalised them, its headers
    (``head``, then the Content-Length named ``length`` when the body's
    length goes there, then ``tail``), timeouts, and the transport."""

    method: str
    url: httpx.URL
    head: tuple[_Header, ...]
    length: bytes | None
    tail: tuple[_Header, ...]
    extensions: dict[str, Any]
    transport: httpx.AsyncBaseTransport


# json.dumps with these options builds a new encoder on every call (half its
# time for a small body); this one is built once and encodes the same.
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# Stands in a body for its conversation while the rest is encoded: a string
# no request holds (a NUL and this process's random tag; were it met, the
# body would be encoded whole).
_SLOT = f"\x00oma-conversation-{secrets.token_hex(8)}\x00"
_SLOT_JSON = _JSON.encode(_SLOT).encode()


def _encode(value: Any) -> bytes:
    return _JSON.encode(value).encode()


def json_body(body: dict[str, Any]) -> bytes:
    """A JSON body exactly as httpx encodes ``json=``. A conversation a
    :class:`~oma_host.providers.wire_prefix.WirePrefix` rendered is spliced
    in from its messages' JSON, most of it encoded for an earlier request."""
    for key, value in body.items():
        if type(value) is WireMessages:
            head, found, tail = _encode({**body, key: _SLOT}).partition(_SLOT_JSON)
            if found and _SLOT_JSON not in tail:
                array = b",".join(value.json_items(_encode))
                return b"".join((head, b"[", array, b"]", tail))
            break
    return _encode(body)


def encode_body(body: Body) -> tuple[bytes, BodyKind]:
    """The bytes of ``body`` and its kind, once: a request retried sends them again."""
    if body is None:
        return b"", "none"
    if isinstance(body, dict):
        return json_body(body), "json"
    # httpx sends no Content-Length for an empty body, but a 0 in front.
    return body, "bytes" if body else "empty"


class ProviderClient(httpx.AsyncClient):
    """httpx's client, keeping no cookies, on a :class:`RoutedTransport`
    (one transport direct, one per proxy).

    API providers authenticate every request by its key; one cookie jar for
    every agent and session of the host would carry one account's cookies
    into another's requests, and reading each response's cookies costs time
    on every request."""

    def __init__(self, transport: RoutedTransport, *, timeout: httpx.Timeout) -> None:
        # The environment's proxies are the router's: httpx reads none itself.
        super().__init__(transport=transport, timeout=timeout, trust_env=False)
        self.router = transport
        self._templates: dict[
            tuple[str, str, tuple[tuple[str, str], ...], str], _Template | None
        ] = {}

    @property
    def cookies(self) -> httpx.Cookies:
        return _NO_COOKIES

    @cookies.setter
    def cookies(self, cookies: Any) -> None:
        raise TypeError("the providers' HTTP client keeps no cookies")

    def prepare(
        self, method: str, url: str, headers: Mapping[str, str], body: Body
    ) -> tuple[httpx.Request, httpx.AsyncBaseTransport | None]:
        """The request ``build_request`` would make, and the transport to hand
        it to, or None when it must go through :meth:`send`: a URL with
        credentials, which httpx's auth layer handles, one that is not plain
        http(s), whose error httpx reports, or a client given auth, event
        hooks or redirects to follow (the providers' client has none)."""
        data, kind = encode_body(body)
        return self.prepare_encoded(method, url, headers, data, kind)

    def prepare_encoded(
        self, method: str, url: str, headers: Mapping[str, str], data: bytes, kind: BodyKind
    ) -> tuple[httpx.Request, httpx.AsyncBaseTransport | None]:
        """:meth:`prepare` for a body :func:`encode_body` has encoded."""
        key = (method, url, tuple(headers.items()), kind)
        template = self._templates.get(key)
        if template is None and key not in self._templates:
            template = self._template(method, url, headers, kind)
            if len(self._templates) >= _MAX_TEMPLATES:
                self._templates.clear()
            self._templates[key] = template
        if template is None:
            return self._built(method, url, headers, data, kind), None
        if template.length is None:
            items: tuple[_Header, ...] | list[_Header] = template.head
        else:  # Content-Length as httpx writes it: str(len(body)), ASCII
            length = (template.length, str(len(data)).encode())
            items = [*template.head, length, *template.tail]
        # With stream=, httpx adds no headers of its own: the template has them.
        request = httpx.Request(
            template.method,
            template.url,
            headers=items,
            stream=httpx.ByteStream(data),
            extensions=template.extensions,
        )
        request.read()  # the body as bytes, as build_request leaves it
        return request, template.transport

    def _built(
        self, method: str, url: str, headers: Mapping[str, str], data: bytes, kind: BodyKind
    ) -> httpx.Request:
        """httpx's own request for an encoded body: ``json=`` is ``content=``
        plus a Content-Type it adds last, unless the caller gave one."""
        request = self.build_request(
            method, url, headers=headers, content=None if kind == "none" else data
        )
        raw = request.headers.raw
        if kind == "json" and not any(name.lower() == b"content-type" for name, _ in raw):
            request.headers = httpx.Headers([*raw, (b"Content-Type", b"application/json")])
        return request

    def _template(
        self, method: str, url: str, headers: Mapping[str, str], kind: BodyKind
    ) -> _Template | None:
        """httpx's own request for a stand-in body, as the template."""
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or parsed.userinfo:
            return None
        hooks = self.event_hooks
        if self.auth is not None or self.follow_redirects or hooks["request"] or hooks["response"]:
            return None  # never so for the providers' client; send does that work
        if kind == "json":
            probe = self.build_request(method, parsed, headers=headers, json={})
        elif kind == "bytes":
            probe = self.build_request(method, parsed, headers=headers, content=b"x")
        else:  # no body, or an empty one: the same headers as for the real one
            probe = self.build_request(method, parsed, headers=headers, content=b"")
        items = tuple(probe.headers.raw)
        head: tuple[_Header, ...] = items
        tail: tuple[_Header, ...] = ()
        length: bytes | None = None
        # A Content-Length the caller gave stays as given, as httpx leaves it.
        if kind in ("json", "bytes") and not any(n.lower() == "content-length" for n in headers):
            for at, (name, _) in enumerate(items):
                if name.lower() == b"content-length":
                    head, length, tail = items[:at], name, items[at + 1 :]
                    break
        return _Template(
            method=probe.method,
            url=probe.url,
            head=head,
            length=length,
            tail=tail,
            extensions=probe.extensions,
            transport=self.router.transport_for(probe.url),
        )

    async def dispatch(
        self, request: httpx.Request, transport: httpx.AsyncBaseTransport | None
    ) -> httpx.Response:
        """Send a request from :meth:`prepare` and return the response with
        its body unread. With a transport, the request goes straight to it:
        the client has no auth, event hooks, cookies or redirects to handle."""
        if transport is None:
            return await self.send(request, stream=True)
        if self.is_closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        response = await transport.handle_async_request(request)
        response.request = request
        if _httpx_log.isEnabledFor(logging.INFO):
            _httpx_log.info(
                'HTTP Request: %s %s "%s %d %s"',
                request.method,
                request.url,
                response.http_version,
                response.status_code,
                response.reason_phrase,
            )
        return response


def build_client(settings: HttpSettings) -> ProviderClient:
    """A new client with these settings."""
    factory: TransportFactory = httpx.AsyncHTTPTransport
    if settings.transport == "aiohttp":
        # Imported here, on the first provider request: aiohttp takes ~0.1 s to load.
        from oma_host.providers.aiohttp_transport import GatedAiohttpTransport

        factory = GatedAiohttpTransport
    verify = trust_context()
    limits = httpx.Limits(
        max_connections=settings.max_connections,
        max_keepalive_connections=settings.max_keep_alive_connections,
    )

    def make(proxy: httpx.Proxy | None) -> httpx.AsyncBaseTransport:
        return factory(verify=verify, limits=limits, proxy=proxy)

    return ProviderClient(
        RoutedTransport(make, environment_proxies()),
        timeout=httpx.Timeout(
            connect=settings.connect_timeout_ms / 1000,
            read=settings.read_timeout_ms / 1000,
            write=settings.write_timeout_ms / 1000,
            pool=settings.pool_timeout_ms / 1000,
        ),
    )
