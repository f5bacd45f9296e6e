"""A run cancelled while its command is being started leaves nothing
running: asyncio forks the command before it has connected its pipes, and a
cancellation in between used to kill the command alone, leaving what it had
already started (here a ``sleep``) alive."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from oma_host.process.groups import end_process_group, spawn_group
from tests.server.helpers import pid_alive


async def _child_pid(pidfile: Path, within_s: float) -> int | None:
    """The background child's pid, if the command got as far as writing it."""
    deadline = asyncio.get_running_loop().time() + within_s
    while asyncio.get_running_loop().time() < deadline:
        with contextlib.suppress(FileNotFoundError, ValueError):
            return int(pidfile.read_text())
        await asyncio.sleep(0.02)
    return None


@pytest.mark.parametrize("passes", range(8))
async def test_a_cancelled_start_ends_the_whole_group(tmp_path: Path, passes: int) -> None:
    pidfile = tmp_path / "child"
    script = f"sleep 60 & echo $! > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; wait"
    spawning = asyncio.ensure_future(
        spawn_group(["sh", "-c", script], cwd=None, env=dict(os.environ))
    )
    for _ in range(passes):  # cancel at each step of the start in turn
        await asyncio.sleep(0)
    # Hold the loop, as a loaded host would, so a command already forked gets
    # to start its child before the cancellation reaches the start.
    time.sleep(0.3)
    spawning.cancel()
    try:
        # Before the fix, asyncio's own clean-up waited here for the pipes the
        # surviving child still held, for as long as it lived.
        async with asyncio.timeout(10):
            process = await spawning
    except asyncio.CancelledError:
        pass
    else:  # the start had finished: ending it is the caller's job, as in the bridges
        await end_process_group(process)
        await process.wait()  # and its pipes closed, before the test's loop ends
    child = await _child_pid(pidfile, within_s=1.0)
    if child is None:
        return  # cancelled before the command ran its first line
    try:
        for _ in range(150):
            if not pid_alive(child):
                return
            await asyncio.sleep(0.02)
        pytest.fail(f"the command's child {child} outlived the cancelled start")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
