"""What a run is doing right now, in words ("waiting for claude-sonnet-4-5",
"calling tool grep"), for a door that shows it while the run is under way.

The words travel beside the run rather than through it: a door that wants
them sets a sink with :func:`watching` around the run, and a backend calls
:func:`report_activity` at each step. A context variable carries the sink,
so it reaches the run's tasks without a parameter on every layer between,
and a run nobody watches pays one lookup per step.
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
