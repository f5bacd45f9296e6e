"""Who may read the run viewer: the ``--tcp`` token rule, for a browser.

127.0.0.1 is reachable by every local user and web page, so every request shows
the token: on the URL once (a redirect then sets a cookie), the cookie, or a
Bearer header. The cookie holds a key of this viewer process, not the token,
since cookies are not kept apart by port. A ``Host`` not naming the loopback is
refused, against DNS rebinding. docs/security.md, "The run viewer".
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum

from oma_host.server.tcp_token import new_token, token_matches

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
TOKEN_PARAMETER = "token"
COOKIE_PREFIX = "oma-runs-"
_BEARER = "bearer "


class Verdict(Enum):
    """What a request showed."""

    ALLOWED = "allowed"
    MISSING = "missing"  # no token, no cookie, no Authorization header: 401
    WRONG = "wrong"  # one of them, not matching: 403


def host_name(header: str | None) -> str | None:
    """The name in a ``Host`` header (``name``, ``name:port``, ``[v6]:port``),
    lowercased; None when there is none."""
    if not header:
        return None
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        return None if end < 0 else header[: end + 1]
    return header.partition(":")[0]


def is_loopback_host(header: str | None) -> bool:
    """Whether a ``Host`` header names the loopback (see the module docstring)."""
    return host_name(header) in LOOPBACK_NAMES


class ViewerGuard:
    """The token of one viewer and the cookie key it hands out for it."""

    def __init__(self, token: str, port: int) -> None:
        self._token = token
        self._cookie_key = new_token()
        # One name per port: two viewers on 127.0.0.1 share the cookie jar.
        self.cookie_name = f"{COOKIE_PREFIX}{port}"

    @property
    def cookie_value(self) -> str:
        return self._cookie_key

    def url_token(self, query: Mapping[str, str]) -> Verdict | None:
        """The verdict on a URL's ``?token=``; None when it has none."""
        if TOKEN_PARAMETER not in query:
            return None
        return _verdict(token_matches(self._token, query[TOKEN_PARAMETER]))

    def credentials(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Verdict:
        """The verdict on a request's ``Authorization`` header and cookie."""
        authorization = headers.get("Authorization")
        if authorization is not None:
            scheme_ok = authorization.lower().startswith(_BEARER)
            given = authorization[len(_BEARER) :] if scheme_ok else None
            return _verdict(token_matches(self._token, given))
        cookie = cookies.get(self.cookie_name)
        if cookie is not None:
            return _verdict(token_matches(self._cookie_key, cookie))
        return Verdict.MISSING


def _verdict(matches: bool) -> Verdict:
    return Verdict.ALLOWED if matches else Verdict.WRONG
