"""Awaiting one step of a run unless its abort signal fires first.

The agent waits on its lock and on its backend through these: an abort
cancels the step in the waiting task itself (no task of its own for the
step, none waiting on the signal; this is on every run's path) and raises
:class:`Aborted`, while a cancellation from anyone else stays one.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

from oma_host.core.abort import AbortSignal

T = TypeVar("T")


class Aborted(Exception):
    """The abort signal fired before the awaited step finished."""


async def unless_aborted(step: Awaitable[T], abort: AbortSignal | None) -> T:
    """Await ``step``; if ``abort`` fires first, cancel it and raise Aborted."""
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
