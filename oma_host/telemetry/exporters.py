"""The process's OTLP exporters: one per config, shared, flushed and shut down within a bound.

The SDK is imported in a thread on the first run that exports, so a door with
telemetry off never loads it; without the ``otel`` extra one warning says so
and runs go on unexported. Flushing runs in daemon threads waited for at most
:data:`FLUSH_TIMEOUT_S`, so an unreachable collector never keeps the process
alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from oma_host.core.spans import Span, SpanSink
from oma_host.telemetry.settings import INSTALL_HINT, Telemetry, TelemetryConfig, settle_telemetry

if TYPE_CHECKING:
    from oma_host.telemetry.otel_export import OtlpExport

log = logging.getLogger(__name__)

# How long a door waits for the queued spans to be sent when a session or the process ends.
FLUSH_TIMEOUT_S = 3.0

_exports: dict[tuple[object, ...], asyncio.Future[OtlpExport | None]] = {}
_warned: set[str] = set()
_environment: Telemetry | None = None


def environment_telemetry() -> Telemetry:
    """The export the ``OTEL_*`` variables ask for (settled once a process)."""
    global _environment
    if _environment is None:
        _environment = settle_telemetry()
    return _environment


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning("%s", message)


async def telemetry_sink(telemetry: Telemetry) -> SpanSink | None:
    """The sink that exports a recording's spans as ``telemetry`` says,
    built on first use; None when nothing is exported (off, the extra
    missing, or an exporter the variables could not build: each said once)."""
    for warning in telemetry.warnings:
        _warn_once(f"telemetry is off: {warning}")
    config = telemetry.config
    if config is None:
        return None
    building = _exports.get(config.exporter_key)
    if building is None:
        building = _exports[config.exporter_key] = asyncio.ensure_future(_build(config))
    export = await asyncio.shield(building)
    return None if export is None else _Guarded(export)


async def _build(config: TelemetryConfig) -> OtlpExport | None:
    try:
        return await asyncio.to_thread(_new_export, config)
    except ImportError as error:
        _warn_once(
            f"OpenTelemetry export is configured but the SDK is not installed "
            f"(no module {error.name!r}): {INSTALL_HINT} adds it; the host goes on "
            "without exporting spans"
        )
    except Exception as error:  # a variable the SDK refuses (a bad header, say)
        _warn_once(f"telemetry is off: the OTLP exporter could not be set up: {error}")
    return None


def _new_export(config: TelemetryConfig) -> OtlpExport:
    from oma_host.telemetry.otel_export import OtlpExport

    return OtlpExport(config)


class _Guarded:
    """A sink that never raises into the run it records: a span the export
    cannot take is logged (once per kind of failure) and dropped."""

    def __init__(self, export: OtlpExport) -> None:
        self._export = export

    def span_started(self, span: Span) -> None:
        pass

    def span_ended(self, span: Span) -> None:
        try:
            self._export.span_ended(span)
        except Exception as error:
            _warn_once(f"a span could not be exported: {type(error).__name__}: {error}")


def _built() -> list[OtlpExport]:
    return [
        export
        for building in _exports.values()
        if building.done() and not building.cancelled() and building.exception() is None
        if (export := building.result()) is not None
    ]


async def flush_telemetry(timeout_s: float = FLUSH_TIMEOUT_S) -> None:
    """Send the spans queued so far, waiting at most ``timeout_s``."""
    exports = _built()
    if exports:

        def flush() -> None:
            for export in exports:
                export.flush()

        await _bounded(flush, "flushing", timeout_s)


async def close_telemetry(timeout_s: float = FLUSH_TIMEOUT_S) -> None:
    """Send the queued spans and stop every exporter (the process is
    ending), waiting at most ``timeout_s``."""
    exports = _built()
    _exports.clear()
    if exports:

        def shutdown() -> None:
            for export in exports:
                export.shutdown()

        await _bounded(shutdown, "closing", timeout_s)


async def _bounded(work: Callable[[], object], what: str, timeout_s: float) -> None:
    """Run ``work`` in a daemon thread (a send stuck on an unreachable
    collector must not keep the process alive, as the default executor's
    threads would) and wait for it at most ``timeout_s``."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finished() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            work()
        except Exception as error:
            log.warning("telemetry: %s the exporter failed: %s", what, error)
        finally:
            # RuntimeError: the loop has closed, and nobody waits any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(finished)

    threading.Thread(target=run, name=f"oma-host telemetry {what}", daemon=True).start()
    try:
        await asyncio.wait_for(done, timeout_s)
    except TimeoutError:
        log.warning(
            "telemetry: spans not sent within %g s (is the collector reachable?); "
            "the rest are dropped",
            timeout_s,
        )
