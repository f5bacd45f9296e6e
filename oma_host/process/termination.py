"""SIGTERM and SIGHUP end a serving host as Ctrl-C does: by cancelling the serving task.

That task's cleanup aborts the runs in flight, ends their process trees and MCP
servers, and answers them; the default action would end the process at once and
leave what it started running. Imports nothing of ours.
"""

from __future__ import annotations

import asyncio
import signal

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Termination:
    """Cancels one task on the first ending signal and remembers which it was."""

    def __init__(self, task: asyncio.Task[object]) -> None:
        self._task = task
        self._loop = asyncio.get_running_loop()
        self.signum: int | None = None
        for signum in ENDING_SIGNALS:
            self._loop.add_signal_handler(signum, self._end, signum)

    def _end(self, signum: int) -> None:
        if self.signum is None:  # a second signal changes nothing: the cleanup is running
            self.signum = signum
            self._task.cancel()

    @property
    def exit_code(self) -> int:
        """128 plus the signal's number, as a shell reports a process it ended."""
        assert self.signum is not None
        return 128 + self.signum

    def remove(self) -> None:
        for signum in ENDING_SIGNALS:
            self._loop.remove_signal_handler(signum)
