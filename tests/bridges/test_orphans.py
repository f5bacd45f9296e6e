"""Descendants that leave a run's process group (``setsid``) end with the
run, and their exit statuses are collected (issue 12, item 11): the host is a
child subreaper, so they come back to it instead of to init."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from oma_host.cli.client import HostClient
from tests.server.helpers import create, kill_quietly, pid_alive, process_config, wait_dead

# Waits (up to 10 s) until the file ``$1`` holds a pid.
AWAIT_PID = 'i=0; while [ ! -s "{0}" ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done'
QUIET = "</dev/null >/dev/null 2>&1"


def gone(pid: int, timeout: float = 10.0) -> bool:
    """True once ``pid`` has no /proc entry at all: ended *and* reaped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return True
        time.sleep(0.05)
    return False


def read_pid(path: Path) -> int:
    return int(path.read_text().split()[0])


@pytest.mark.parametrize("terminal", [False, True])
async def test_a_setsid_grandchild_ends_with_its_run_and_is_reaped(
    host: HostClient, tmp_path: Path, terminal: bool
) -> None:
    pidfile = tmp_path / "pid"
    script = (
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' {QUIET} & "
        f"{AWAIT_PID.format(pidfile)}; echo started"
    )
    agent = await create(host, **process_config("d", script, input="none", terminal=terminal))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    grandchild = read_pid(pidfile)
    try:
        assert result["success"] is True and result["output"].strip() == "started"
        assert gone(grandchild)
    finally:
        kill_quietly(grandchild)


async def test_a_double_forked_daemon_ends_with_its_run(host: HostClient, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # The middle process exits at once: the daemon is orphaned, in a session of its own.
    script = f"setsid sh -c 'sleep 60 {QUIET} & echo $! > {pidfile}'; {AWAIT_PID.format(pidfile)}"
    agent = await create(host, **process_config("d", script, input="none"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    daemon = read_pid(pidfile)
    try:
        assert result["success"] is True
        assert gone(daemon)
    finally:
        kill_quietly(daemon)


async def test_an_orphan_that_ends_by_itself_is_reaped(host: HostClient, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    # Orphaned at once (its parent exits), it ends 0.3 s later, while the run still runs.
    script = (
        f"setsid sh -c 'sleep 0.3 {QUIET} & echo $! > {pidfile}'; "
        f"{AWAIT_PID.format(pidfile)}; sleep 1"
    )
    agent = await create(host, **process_config("r", script, input="none"))
    assert (await host.request("agent/run", {"agentId": agent, "input": "go"}))["success"]
    assert gone(read_pid(pidfile))  # not left a zombie of the host


async def test_a_run_ending_leaves_another_runs_daemon_alone(
    host: HostClient, tmp_path: Path
) -> None:
    long_pid, quick_pid = tmp_path / "long", tmp_path / "quick"
    daemon = "setsid sh -c 'sleep 60 {quiet} & echo $! > {file}'; " + AWAIT_PID
    long_agent = await create(
        host,
        **process_config(
            "long", daemon.format(long_pid, quiet=QUIET, file=long_pid) + "; sleep 60", input="none"
        ),
    )
    quick_agent = await create(
        host,
        **process_config(
            "quick", daemon.format(quick_pid, quiet=QUIET, file=quick_pid), input="none"
        ),
    )
    msg_id, pending = host.start_request("agent/run", {"agentId": long_agent, "input": "go"})
    for _ in range(400):
        if long_pid.exists() and long_pid.read_text().strip():
            break
        await asyncio.sleep(0.025)
    long_daemon = read_pid(long_pid)
    try:
        await host.request("agent/run", {"agentId": quick_agent, "input": "go"})
        assert gone(read_pid(quick_pid))
        assert pid_alive(long_daemon)  # another run's, still running
        host.cancel(msg_id)
        await asyncio.wait_for(pending, 15)
        assert wait_dead(long_daemon) and gone(long_daemon)
    finally:
        kill_quietly(long_daemon)
        if quick_pid.exists():
            kill_quietly(read_pid(quick_pid))


async def test_commands_that_exit_at_once_keep_their_exit_codes_while_others_end(
    host: HostClient,
) -> None:
    """A run ending looks for orphans among the host's children. A command
    that exits before the host has recorded it as started is a zombie child
    the host does not yet know as its own: it is left to its owner, whose
    exit code is the run's (reaped as an orphan, it would read as 255).
    Runs start while others end, ten in flight, 300 in all."""
    agent = await create(host, **process_config("quick", "echo broken >&2; exit 4", input="none"))
    messages: set[str] = set()

    async def runs(count: int) -> None:
        for _ in range(count):
            result = await host.request("agent/run", {"agentId": agent, "input": "go"})
            messages.add(result["status"]["message"])

    await asyncio.gather(*(runs(30) for _ in range(10)))
    assert messages == {"sh exited with code 4: broken"}
