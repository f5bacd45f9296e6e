"""AbortSignal: cancels a run from outside (the seed's AbortSignal).

Kept apart from the agent so the server can hand one to every request
without importing the agent core before it is needed.
"""

from __future__ import annotations

import asyncio


class AbortSignal:
    """Cancels a run from outside; the run then returns a ``cancelled`` result
    carrying its partial output (the wire turns that into error -32800)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def abort(self) -> None:
        self._event.set()

    @property
    def aborted(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()
