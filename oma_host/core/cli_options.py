"""The command line's value checks, the ``acp`` command's options and the
exit statuses of Ctrl-C and a closed pipe, in a module that imports nothing: the parser
(:mod:`oma_host.cli.main`) and the ACP door's early answer
(:mod:`oma_host.acp_server.early`, which reads ``oma-host acp``'s options
before ``argparse`` is imported) take them from here, so both accept exactly
the same command lines.

A check raises ValueError with the message the user sees; the parser turns
it into argparse's usage error.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

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


def log_level(value: str) -> str:
    if value not in LOG_LEVELS:
        raise ValueError(f"wants one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return value


def any_text(value: str) -> str:
    return value


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


# ``oma-host acp``'s options, each taking one value, and the check of that
# value: the parser declares these and no others after ``acp``.
ACP_OPTIONS: dict[str, Callable[[str], object]] = {
    "--agents": any_text,
    "--state-dir": any_text,
    "--log-level": log_level,
    "--max-message-bytes": positive_int,
    "--session-idle-timeout": positive_seconds,
    "--telemetry-endpoint": collector_url,
    "--telemetry-capture-content": true_or_false,
}
# ``oma-host acp``'s options that take no value.
ACP_FLAGS = frozenset({"--no-telemetry"})
