"""The garbage collector's settings for a serving host.

A run in flight holds about 130 container objects (its tasks, coroutines,
futures, closures, the HTTP request and response) for as long as its
provider takes to answer. At CPython's default thresholds (700, 10, 10) a
young collection runs every 700 net allocations, so with hundreds of runs in
flight every one of those objects is traversed again and again, survives
into the oldest generation, and the full collections that follow traverse
the whole heap, until the collector takes a large share of the host's CPU.

So the young threshold depends on whether the host is busy:

- **Idle or lightly used:** 10,000 net allocations, as a host sees between
  bursts and one request at a time.
- **While any request is in flight** (over every session, both doors):
  :data:`BUSY_YOUNG_THRESHOLD`, so hundreds of runs in flight do not set off
  young collections that traverse their live objects for nothing (the young
  generation counts net allocations, and it also holds the objects of every
  run that started since the last collection and is still running).

When the last request ends, the usual threshold is back, and the collection
that waited runs at the next allocation, with the runs' objects gone.

Garbage still goes the usual way: reference counting frees almost
everything at once (a burst of runs leaves few objects in cycles); only
reference cycles wait for a collection. Under a load that never lets
up, they are still collected every :data:`BUSY_YOUNG_THRESHOLD` net
allocations, so they stay bounded.
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
