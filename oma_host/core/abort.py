"""AbortSignal: cancels a run from outside (the seed's AbortSignal).

Kept apart from the agent so the server can hand one to every request
without importing the agent core before it is needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class AbortSignal:
    """Cancels a run from outside; the run then returns a ``cancelled`` result
    carrying its partial output (the wire turns that into error -32800)."""

    __slots__ = ("_aborted", "_event", "_listeners")

    def __init__(self) -> None:
        # Every request gets a signal and almost none fires: the event and
        # the listener list are made only when someone waits or listens.
        self._aborted = False
        self._event: asyncio.Event | None = None
        self._listeners: list[Callable[[], object]] | None = None

    def abort(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        if self._event is not None:
            self._event.set()
        listeners, self._listeners = self._listeners, None
        for listener in listeners or ():
            listener()

    @property
    def aborted(self) -> bool:
        return self._aborted

    def add_listener(self, listener: Callable[[], object]) -> None:
        """Call ``listener`` once, when the signal fires (not if it has)."""
        if self._listeners is None:
            self._listeners = [listener]
        else:
            self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], object]) -> None:
        """Forget ``listener`` (nothing happens if it was called or never added)."""
        if self._listeners is not None and listener in self._listeners:
            self._listeners.remove(listener)

    async def wait(self) -> None:
        if self._aborted:
            return
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()
