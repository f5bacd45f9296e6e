"""The command line's value checks and exit statuses, import-free: the
parser (:mod:`oma_host.cli.main`) declares each option with them, and the
JSON-RPC door checks ``initializationOptions.telemetry.endpoint`` with
:func:`collector_url`. A check raises ValueError with the message the user sees."""

from __future__ import annotations

# The exit status of a program ended by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
# The exit status of one whose reader went away (128 + SIGPIPE: ``oma-host runs list | head``).
BROKEN_PIPE = 141
# oma-host acp: how long a session's agent keeps its processes while it runs nothing.
DEFAULT_SESSION_IDLE_TIMEOUT_S = 1800.0
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"wants a positive number of seconds, got {value!r}")
    return seconds


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValueError(f"wants a positive whole number, got {value!r}")
    return number


def collector_url(value: str) -> str:
    """An OpenTelemetry collector's OTLP/HTTP base URL (as
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` takes it); ``initializationOptions.telemetry``
    checks its ``endpoint`` with this too."""
    scheme, _, rest = value.partition("://")
    if scheme not in ("http", "https") or not rest.split("/", 1)[0]:
        raise ValueError(
            "wants the collector's OTLP/HTTP base URL, http:// or https:// with a host "
            f"(as OTEL_EXPORTER_OTLP_ENDPOINT: http://localhost:4318), got {value!r}"
        )
    return value


def true_or_false(value: str) -> bool:
    if value not in ("true", "false"):
        raise ValueError(f"wants true or false, got {value!r}")
    return value == "true"
