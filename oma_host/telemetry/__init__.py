"""Live export of the runs' spans to an OpenTelemetry collector (OTLP/HTTP), for both doors.

A door whose telemetry is off imports nothing here but :mod:`.settings`.
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
