"""Live export of the runs' spans to an OpenTelemetry collector (OTLP/HTTP),
for both doors.

settings     whether a door exports and where: the ``OTEL_*`` variables and a
             client's or command line's ask, settled without importing the SDK
exporters    the process's exporters, built on first use (the SDK imported in a
             thread then), flushed and shut down within a bounded wait
otel_export  the SDK's half (the ``otel`` extra): spans to ``ReadableSpan``\\ s,
             a ``BatchSpanProcessor`` over the ``OTLPSpanExporter``

Nothing here is imported by a door whose telemetry is off, but ``settings``.
"""

from __future__ import annotations

import sys


async def close_if_used() -> None:
    """At the end of a door's process: send the spans still queued and stop
    the exporters, if a run ever built one (nothing is imported otherwise)."""
    exporters = sys.modules.get("oma_host.telemetry.exporters")
    close = getattr(exporters, "close_telemetry", None)
    if close is not None:
        await close()
