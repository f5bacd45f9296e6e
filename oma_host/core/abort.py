"""Cancelling a run from outside: the :class:`AbortSignal` a request carries,
and awaiting each step of a run unless that signal fires first.

Free of the agent, so the server hands every request a signal without
importing the agent core."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


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


class Aborted(Exception):
    """The abort signal fired before the awaited step finished."""


async def unless_aborted(step: Awaitable[T], abort: AbortSignal | None) -> T:
    """Await ``step``; if ``abort`` fires first, cancel it and raise Aborted
    (a cancellation from anyone else stays a cancellation). The agent waits
    on its lock and its backend through this."""
    if abort is None:
        return await step
    if abort.aborted:  # aborted before it started: do no work at all
        if inspect.iscoroutine(step):
            step.close()
        raise Aborted
    # The step runs in this task, and the signal cancels this task, the way
    # asyncio.timeout does: no task of its own for the step, none waiting on
    # the signal (this is on every run's path). The cancellation we asked
    # for is told from anyone else's by the task's count of cancel requests.
    task = asyncio.current_task()
    if task is None:  # awaited by hand, outside any task: give it one
        return await asyncio.ensure_future(unless_aborted(step, abort))
    cancelling = task.cancelling()
    fired = False

    def cancel_step() -> None:
        nonlocal fired
        # Cancelled once: a second cancel would cut short the cleanup the
        # first one started (ending a process group, say).
        if task.cancelling() == cancelling:
            fired = True
            task.cancel()

    abort.add_listener(cancel_step)
    try:
        result = await step
    except asyncio.CancelledError:
        if fired and task.uncancel() <= cancelling:
            raise Aborted from None  # ours alone: the run was aborted
        raise
    finally:
        abort.remove_listener(cancel_step)
    if fired:  # the step finished all the same: take our request back
        task.uncancel()
    return result


async def acquire_unless_aborted(lock: asyncio.Lock, abort: AbortSignal | None) -> bool:
    """Take ``lock`` in arrival order; False if ``abort`` fired first. Never
    leaves the lock held when it returns False or raises."""
    acquiring = asyncio.ensure_future(lock.acquire())
    try:
        await unless_aborted(asyncio.shield(acquiring), abort)
        return True
    except BaseException as error:
        if acquiring.done() and not acquiring.cancelled() and acquiring.exception() is None:
            lock.release()  # granted at the very moment we gave up
        else:
            acquiring.cancel()
        if isinstance(error, Aborted):
            return False
        raise
