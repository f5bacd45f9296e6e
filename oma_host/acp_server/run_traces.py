"""The ACP door's run traces: each prompt turn recorded as a run, as the JSON-RPC door does.

A trace (a ``runs`` row and the run's spans,
:func:`oma_host.orchestration.store_schema.run_record`) is written in a thread
after the turn's answer, never on the prompt's path; closing the door waits
for what is still being written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from oma_host.orchestration.store import Store
from oma_host.orchestration.store_schema import RunTrace, SpanRow

log = logging.getLogger(__name__)


class RunTraces:
    """The traces being written for one ``oma-host acp`` process."""

    def __init__(self, store: Callable[[], Awaitable[Store]]) -> None:
        self._store = store
        self._writing: set[asyncio.Task[None]] = set()

    def record(self, trace: RunTrace, spans: list[SpanRow]) -> None:
        task = asyncio.ensure_future(self._write(trace, spans))
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    async def _write(self, trace: RunTrace, spans: list[SpanRow]) -> None:
        try:
            store = await self._store()
            await asyncio.to_thread(store.record_runs, [trace], spans)
        except Exception as error:
            log.warning("could not record the trace of %s: %s", trace.run_id, error)

    async def drain(self) -> None:
        """Wait for the traces still being written."""
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)
