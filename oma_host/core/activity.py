"""What a run is doing right now, in words ("calling tool grep"), for a door that shows it.

The words travel beside the run, not through it: a door sets a sink with
:func:`watching` and a backend calls :func:`report_activity` at each step. A
context variable carries the sink, so no layer in between takes a parameter,
and an unwatched run pays one lookup per step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar

ActivitySink = Callable[[str], None]

_sink: ContextVar[ActivitySink | None] = ContextVar("oma_activity_sink", default=None)


@contextlib.contextmanager
def watching(sink: ActivitySink) -> Iterator[None]:
    """Send the activity of the runs started inside this block to ``sink``."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def report_activity(message: str) -> None:
    """Tell whoever watches the current run what it is doing now."""
    sink = _sink.get()
    if sink is not None:
        sink(message)
