"""The one owner of a session's background work.

Tasks no request waits for, threads, timers and the closers of services built
on first use all go through :class:`Supervisor`, whose :meth:`Supervisor.drain`
ends them at shutdown, each within a bound, so nothing stuck keeps the host
from exiting.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

log = logging.getLogger("oma_host.server")

DRAIN_TIMEOUT_S = 5.0


class Supervisor:
    """Background tasks, threads, timers and closers of one session."""

    def __init__(self) -> None:
        self._work: set[asyncio.Future[Any]] = set()
        self._timers: set[asyncio.TimerHandle] = set()
        self._closers: list[tuple[str, Callable[[], Awaitable[None]]]] = []
        self._draining = False
        self._pauses: set[asyncio.Future[None]] = set()

    def spawn(self, what: str, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background; a failure is logged as ``what``."""
        self._keep(what, asyncio.ensure_future(work))

    def in_thread(self, what: str, work: Callable[[], object]) -> None:
        """Run blocking ``work`` in the default executor."""
        self._keep(what, asyncio.get_running_loop().run_in_executor(None, work))

    def later(self, delay_s: float, what: str, work: Callable[[], object]) -> None:
        """Run blocking ``work`` in a thread after ``delay_s`` (unless drained first)."""

        def start() -> None:
            self._timers.discard(handle)
            self.in_thread(what, work)

        handle = asyncio.get_running_loop().call_later(delay_s, start)
        self._timers.add(handle)

    async def pause(self, delay_s: float) -> None:
        """Sleep ``delay_s``, or less: a drain ends every pause at once (and
        one begun while draining returns at once). Background work that
        waits to gather more work uses it, so shutdown never waits it out."""
        if self._draining:
            return
        loop = asyncio.get_running_loop()
        pause: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(delay_s, _end_pause, pause)
        self._pauses.add(pause)
        try:
            await pause
        finally:
            timer.cancel()
            self._pauses.discard(pause)

    def on_close(self, what: str, closer: Callable[[], Awaitable[None]]) -> None:
        """Run ``closer`` at shutdown; closers run last registered first, so a
        service closes before the services it was built on."""
        self._closers.append((what, closer))

    async def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Stop the timers, wait for the work, run the closers (idempotent)."""
        self._draining = True
        for pause in self._pauses:
            _end_pause(pause)
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()
        if self._work:
            await asyncio.wait(set(self._work), timeout=timeout_s)
        closers, self._closers = self._closers, []
        for what, closer in reversed(closers):
            try:
                await asyncio.wait_for(closer(), timeout_s)
            except Exception as error:  # TimeoutError included: the next closer still runs
                log.warning("%s failed to close: %s", what, error or type(error).__name__)

    def _keep(self, what: str, future: asyncio.Future[Any]) -> None:
        self._work.add(future)

        def done(finished: asyncio.Future[Any]) -> None:
            self._work.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                log.warning("%s failed: %s", what, finished.exception())

        future.add_done_callback(done)


def _end_pause(pause: asyncio.Future[None]) -> None:
    if not pause.done():
        pause.set_result(None)
