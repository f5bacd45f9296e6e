"""The command's log lines on stderr, written by a thread of their own from a bounded queue.

A stderr pipe no one reads blocks a write, and a log call on the event loop
would then stop every session, SIGTERM's handling too. So a log call only
queues the redacted line (dropped and counted when the queue is full), and a
writer thread writes it with ``os.write``; dropped lines are reported, and exit
waits at most :data:`EXIT_WAIT_S`.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import queue
import sys
import threading
from typing import TextIO

from oma_host.core.redact import RedactingFilter

QUEUE_CHARS = 1024 * 1024  # what lines waiting to be written may hold; more are dropped
EXIT_WAIT_S = 1.0  # how long the exit waits for the queue to be written
LOG_FORMAT = "oma-host %(levelname)s %(name)s: %(message)s"


class _Lines:
    """The queue of formatted lines, what they hold, and the count of those dropped."""

    def __init__(self) -> None:
        self.queue: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._held = 0  # characters queued
        self._dropped = 0
        self._lock = threading.Lock()

    def put(self, line: str) -> None:
        """Queue ``line``, or drop it if the queue would hold more than QUEUE_CHARS."""
        with self._lock:
            if self._held + len(line) > QUEUE_CHARS:
                self._dropped += 1
                return
            self._held += len(line)
        self.queue.put(line)

    def take(self) -> str | None:
        """The next line, waiting for one (None: the end)."""
        line = self.queue.get()
        if line is not None:
            with self._lock:
                self._held -= len(line)
        return line

    def take_dropped(self) -> int:
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        return dropped


class _QueueHandler(logging.Handler):
    """Formats a record in the caller's thread and queues its line, never
    waiting (a full queue drops it). Like ``logging.handlers.QueueHandler``,
    but what it queues is the finished line, and a full queue is no error."""

    def __init__(self, lines: _Lines) -> None:
        super().__init__()
        self._lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception as error:  # a bad format string; handleError would write to stderr
            line = f"oma-host ERROR oma_host: a log line could not be formatted ({error!r})"
        self._lines.put(line + "\n")


class _Writer(threading.Thread):
    """Writes the queued lines to a file descriptor (see the module docstring)."""

    def __init__(self, lines: _Lines, fd: int) -> None:
        super().__init__(name="oma-host stderr", daemon=True)
        self._lines = lines
        self._fd = fd

    def run(self) -> None:
        while (line := self._lines.take()) is not None:
            self._write(line)
            if dropped := self._lines.take_dropped():
                self._write(
                    f"oma-host WARNING oma_host: {dropped} log line(s) dropped: "
                    "stderr was not read\n"
                )
        if dropped := self._lines.take_dropped():
            self._write(f"oma-host WARNING oma_host: {dropped} log line(s) dropped\n")

    def _write(self, line: str) -> None:
        data = line.encode(errors="backslashreplace")
        with contextlib.suppress(OSError):  # stderr closed: the line is lost
            while data:
                data = data[os.write(self._fd, data) :]


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Send the root logger's records at ``level`` and above to ``stream``
    (stderr) through the queue of the module docstring, each line redacted.
    A stream with no file descriptor (a test's capture) is written directly."""
    root = logging.getLogger()
    if root.handlers:  # configured already (as logging.basicConfig, it does nothing then)
        return
    target = sys.stderr if stream is None else stream
    try:
        fd = target.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    handler: logging.Handler
    if fd < 0:
        handler = logging.StreamHandler(target)
    else:
        lines = _Lines()
        handler = _QueueHandler(lines)
        writer = _Writer(lines, fd)
        writer.start()
        atexit.register(_finish, lines, writer)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
    root.setLevel(level)


def _finish(lines: _Lines, writer: _Writer) -> None:
    """At exit: the queued lines written, waiting at most EXIT_WAIT_S."""
    lines.queue.put(None)
    writer.join(EXIT_WAIT_S)
