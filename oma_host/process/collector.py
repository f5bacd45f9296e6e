"""The garbage collector's thresholds for a serving host.

Each run in flight holds container objects while its provider answers; at
CPython's default thresholds, hundreds of runs are traversed again and again,
reach the oldest generation, and full collections take much of the CPU. So the
young threshold is raised while any request is in flight
(:data:`BUSY_YOUNG_THRESHOLD`) and restored when the last one ends; reference
counting still frees almost everything at once.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

# Net allocations of container objects between young collections (CPython: 700).
YOUNG_THRESHOLD = 10_000
# Young collections between collections of the middle generation (CPython: 10).
MIDDLE_THRESHOLD = 50
# Middle collections between full ones (CPython's; a full collection also
# waits until the objects it would newly see are a quarter of the heap).
OLD_THRESHOLD = 10
# The young threshold while requests are in flight (see the module docstring):
# under load, at most this many net new container objects, garbage in cycles
# included, wait for a collection.
BUSY_YOUNG_THRESHOLD = 200_000

_serving = False  # tune_for_serving was called: this process is a host
_in_flight = 0  # requests begun and not yet finished, over every session


def tune_for_serving() -> None:
    """Call once, when the host is about to serve: what startup built (the
    imported modules, the method table) lives as long as the process, so it
    is moved out of the collector's sight (``gc.freeze``), and the
    thresholds are raised as the module docstring explains."""
    global _serving
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)
    _serving = True


def request_started() -> None:
    """A request begins. The first of a burst raises the young threshold to
    :data:`BUSY_YOUNG_THRESHOLD`, so the objects of the runs in flight are
    not traversed again and again while they live."""
    global _in_flight
    _in_flight += 1
    if _in_flight == 1 and _serving:
        gc.set_threshold(BUSY_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


def request_finished(_: object = None) -> None:
    """A request has ended (a task's done callback, hence the argument).
    The last one in flight restores the usual threshold: the collection that
    waited runs at the next allocation, with the runs' objects gone."""
    global _in_flight
    _in_flight -= 1
    if _in_flight == 0 and _serving:
        gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


def count_in_flight(task: asyncio.Future[Any]) -> None:
    """Count ``task``, a request's, as in flight until it is done: the
    :func:`request_started` and :func:`request_finished` pair, kept together."""
    request_started()
    task.add_done_callback(request_finished)
