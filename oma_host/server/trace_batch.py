"""A session's run traces waiting to be written, and the writer that stores them in batches.

Written off the event loop, so a trace never delays an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oma_host.orchestration.store import Store
    from oma_host.orchestration.store_schema import RunTrace, SpanRow
    from oma_host.server.supervisor import Supervisor

log = logging.getLogger("oma_host.server")

# How long a run's trace waits for others to share its transaction.
GATHER_S = 0.05


class TraceBatch:
    """The traces waiting to be written for one host session. The first
    trace starts a writer, which waits ``GATHER_S`` for more (a drain at
    shutdown ends the wait) and writes them all in one transaction; traces
    that finish while it writes join the next batch. Runs one after another
    then cost a transaction and a thread hand-off every ``GATHER_S`` rather
    than one each (a large share of a short run's time), and a burst a few.
    A host torn down while the writer waits (Ctrl-C) still writes the batch,
    from a thread the teardown waits for."""

    def __init__(self, supervisor: Supervisor, store: Callable[[], Store]) -> None:
        self._supervisor = supervisor
        self._store = store  # opened on first use: the state's store()
        self._waiting: list[RunTrace] = []
        self._spans: list[SpanRow] = []
        self._writing = False

    def add(self, trace: RunTrace, spans: list[SpanRow] | None = None) -> None:
        self._waiting.append(trace)
        if spans:
            self._spans.extend(spans)
        if not self._writing:
            self._writing = True
            self._supervisor.spawn("the run traces", self._write())

    async def _write(self) -> None:
        try:
            try:
                await self._supervisor.pause(GATHER_S)
            except asyncio.CancelledError:
                self._write_at_teardown()
                raise
            while self._waiting:
                batch, self._waiting = self._waiting, []
                spans, self._spans = self._spans, []
                try:
                    await asyncio.to_thread(self._store().record_runs, batch, spans)
                except Exception as error:
                    _not_recorded(batch, error)
        finally:
            self._writing = False

    def _write_at_teardown(self) -> None:
        """Write what waits from a thread: the event loop is being torn down
        (Ctrl-C), and its teardown waits for the default executor's work."""
        batch, self._waiting = self._waiting, []
        spans, self._spans = self._spans, []
        try:
            record = self._store().record_runs
        except Exception as error:
            _not_recorded(batch, error)
            return

        def write() -> None:
            try:
                record(batch, spans)
            except Exception as error:
                _not_recorded(batch, error)

        asyncio.get_running_loop().run_in_executor(None, write)


def _not_recorded(batch: list[RunTrace], error: Exception) -> None:
    runs = ", ".join(trace[0] for trace in batch)
    log.warning("could not record the traces of %s: %s", runs, error)
