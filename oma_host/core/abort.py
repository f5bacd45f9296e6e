"""AbortSignal: cancels a run from outside (the seed's AbortSignal).

Kept apart from the agent so the server can hand one to every request
without importing the agent core before it is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable


class AbortSignal:
    """Cancels a run from outside; the run then returns a ``cancelled`` result
    carrying its partial output (the wire turns that into error -32800)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._listeners: list[Callable[[], object]] = []

    def abort(self) -> None:
        if self._event.is_set():
            return
        self._event.set()
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener()

    def add_listener(self, listener: Callable[[], object]) -> Callable[[], None]:
        """Call ``listener`` when the signal fires (at once if it has); returns
        what removes it. Cheaper than a task waiting on :meth:`wait`."""
        if self._event.is_set():
            listener()
            return _nothing
        self._listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):  # already called
                self._listeners.remove(listener)

        return remove

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()


def _nothing() -> None:
    """What removes a listener that was called at once."""
