"""Whether a door exports its spans over OTLP, and where (:class:`TelemetryConfig`).

The standard ``OTEL_*`` variables and a client's or the command line's explicit
ask are settled by the rules of docs/telemetry.md, "Turning it on". Content
capture applies whether or not spans are exported: it says what the runs' spans
record. Imports nothing but ``os`` and ``dataclasses``: a door settles its
telemetry before it knows whether the SDK is installed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

CAPTURE_CONTENT_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
PROTOCOL = "http/protobuf"
TRACES_PATH = "v1/traces"
INSTALL_HINT = "pip install 'oma-host[otel]'"


@dataclass(frozen=True)
class TelemetryConfig:
    """An export's settings: where (``traces_endpoint``, the full URL of the
    traces; None: the SDK's variables say), the extra ``headers`` (None:
    the variables'), and the ``service_name`` (None: the variables', else
    ``oma-host``)."""

    traces_endpoint: str | None = None
    headers: tuple[tuple[str, str], ...] | None = field(default=None, repr=False)
    service_name: str | None = None

    @property
    def exporter_key(self) -> tuple[object, ...]:
        """What makes two configs share one exporter."""
        return (self.traces_endpoint, self.headers, self.service_name)


@dataclass(frozen=True)
class Telemetry:
    """A settled config (None: no export), the warnings to log once, and
    whether the runs' spans record message text (exported or not)."""

    config: TelemetryConfig | None
    warnings: tuple[str, ...] = ()
    capture_content: bool = False


def traces_url(endpoint: str) -> str:
    """A collector's OTLP/HTTP base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``
    gives it, to the URL its traces are sent to."""
    return f"{endpoint.rstrip('/')}/{TRACES_PATH}"


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def settle_telemetry(
    *,
    endpoint: str | None = None,
    headers: Mapping[str, str] | None = None,
    service_name: str | None = None,
    capture_content: bool | None = None,
    explicit: bool = False,
    export: bool | None = None,
    environ: Mapping[str, str] | None = None,
) -> Telemetry:
    """The export a door does, by the rules of the module docstring.
    ``explicit``: the client or the command line asked for telemetry (with
    the other arguments, or none: the variables then say where).
    ``export``: the client's or command line's explicit on (True, as
    ``explicit``) or off (False, over the variables); None: not said.
    ``capture_content`` is settled whatever the export: None, the variable says."""
    env = os.environ if environ is None else environ
    if capture_content is None:
        capture_content = _true(env.get(CAPTURE_CONTENT_VARIABLE))
    off = Telemetry(None, capture_content=capture_content)
    if _true(env.get("OTEL_SDK_DISABLED")) or export is False:
        return off
    exporters = [
        name.strip().lower()
        for name in env.get("OTEL_TRACES_EXPORTER", "").split(",")
        if name.strip()
    ]
    explicit = explicit or export is True or endpoint is not None
    if not explicit:
        if "none" in exporters:
            return off
        wanted = "otlp" in exporters or any(env.get(name) for name in ENDPOINT_VARIABLES)
        if not wanted:
            return off
    warnings: list[str] = []
    if exporters and "otlp" not in exporters and "none" not in exporters:
        warnings.append(
            f"OTEL_TRACES_EXPORTER={env['OTEL_TRACES_EXPORTER']}: oma-host exports spans "
            "with otlp only; set OTEL_TRACES_EXPORTER=otlp (or leave it unset)"
        )
    protocol = next((env[name] for name in PROTOCOL_VARIABLES if env.get(name)), PROTOCOL)
    if protocol.strip().lower() != PROTOCOL:
        warnings.append(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol}: oma-host exports spans over OTLP/HTTP "
            f"with protobuf only; set it to {PROTOCOL} and the endpoint to the collector's "
            "OTLP/HTTP port (usually 4318)"
        )
    if warnings:
        return Telemetry(None, tuple(warnings), capture_content)
    config = TelemetryConfig(
        traces_endpoint=None if endpoint is None else traces_url(endpoint),
        headers=None if headers is None else tuple(sorted(headers.items())),
        service_name=service_name,
    )
    return Telemetry(config, capture_content=capture_content)
