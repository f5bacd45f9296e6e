"""The settings of the providers' HTTP client (``initializationOptions.http``).

The client is one per process, so its settings are too: the first
``initialize`` that gives them, or the first provider request, settles them,
and a later session asking for different ones is refused until the client is
closed. Imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oma_host.core.errors import InvalidParamsError

Transport = Literal["aiohttp", "httpx"]


@dataclass(frozen=True)
class HttpSettings:
    """Connection limits and timeouts; the defaults are the official SDKs'
    limits and the host's long-standing timeouts. Field names match
    ``initializationOptions.http`` (camelCase there)."""

    transport: Transport = "aiohttp"
    max_connections: int = 1000
    max_keep_alive_connections: int = 100
    connect_timeout_ms: int = 10_000
    read_timeout_ms: int = 300_000
    write_timeout_ms: int = 60_000
    pool_timeout_ms: int = 30_000


_settings = HttpSettings()
_settled = False


def configure_http(settings: HttpSettings) -> None:
    """Settle the host's HTTP settings, or refuse ones that differ from those
    already in use."""
    global _settings, _settled
    if _settled and settings != _settings:
        raise InvalidParamsError(
            "initializationOptions.http: this host's HTTP client is already set up with "
            f"other settings ({_settings}); it is shared by every session of the host "
            "process, so leave http out or give the same settings"
        )
    _settings, _settled = settings, True


def settle_http_settings() -> HttpSettings:
    """The settings the client is built with; from now on they are fixed."""
    global _settled
    _settled = True
    return _settings


def release_http_settings() -> None:
    """The client is closed: the next one may be built with other settings."""
    global _settings, _settled
    _settings, _settled = HttpSettings(), False
