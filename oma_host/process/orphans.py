"""The descendants of a spawned command that left its process group: found, ended, reaped.

With the host a child subreaper (:mod:`oma_host.process.subreaper`) they stay
in its tree. When a spawn ends, ``/proc`` is read once and each process is put
down to a spawn: by its parents, else its session or process group, else the
``OMA_HOST_SPAWN`` marker in its environment; an orphan with no marker of ours
ends with the last open spawn. Signals go through pidfds, so a reused pid is
never hit. A child not started as a :class:`Spawn` would be taken for an
orphan.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Iterator
from typing import NamedTuple

from oma_host.process.subreaper import subreaper_enabled
from oma_host.process.warden import MARKER, kept_child, marker_held, marker_value, start_warden

_numbers = itertools.count(1)
# Spawns started and not yet ended, by marker.
_open: dict[str, Spawn] = {}
# The pids of commands the host started and has not yet reaped itself
# (asyncio or pexpect waits for them): never reaped here.
_unreaped: set[int] = set()


class Spawn:
    """One command the host starts, from before it is started until its
    process tree has been ended."""

    def __init__(self) -> None:
        self.marker = marker_value(str(next(_numbers)))
        self.pid = 0
        _open[self.marker] = self

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with this spawn's marker, when orphans are tracked; the
        warden that ends marked processes if the host is killed is started
        with the first (:mod:`oma_host.process.warden`)."""
        if not subreaper_enabled():
            return env
        start_warden()
        return {**env, MARKER: self.marker}

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Around starting the command: if that fails, the spawn is closed."""
        try:
            yield
        except BaseException:
            self.close()
            raise

    def started(self, pid: int) -> None:
        self.pid = pid
        _unreaped.add(pid)

    def reaped(self) -> None:
        """The command's exit status has been collected by its owner."""
        _unreaped.discard(self.pid)

    def close(self) -> None:
        """Its tree has been ended: its orphans are anyone's to end now."""
        _open.pop(self.marker, None)


class _Proc(NamedTuple):  # a tuple: a scan makes hundreds of them
    pid: int
    ppid: int
    pgrp: int
    sid: int
    zombie: bool
    start: int  # clock ticks after boot: with the pid, one process


def _read(path: str) -> bytes | None:
    """A /proc file's bytes; None when it is gone or not ours to read.
    (``os.open`` rather than ``open``: a scan reads hundreds of them.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    pieces: list[bytes] = []
    try:
        while piece := os.read(fd, 65536):
            pieces.append(piece)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(pieces)


def _read_stat(pid: int | str) -> _Proc | None:
    data = _read(f"/proc/{pid}/stat")
    if data is None:
        return None
    # The command name is in parentheses and may hold anything, so split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    ppid, pgrp, sid, start = (int(fields[i]) for i in (1, 2, 3, 19))
    return _Proc(int(pid), ppid, pgrp, sid, fields[0] == b"Z", start)


def _scan() -> dict[int, list[_Proc]]:
    """Every process we can read, by parent."""
    children: dict[int, list[_Proc]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (proc := _read_stat(entry.name)) is not None:
            children.setdefault(proc.ppid, []).append(proc)
    return children


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def _marker(pid: int) -> str | None:
    environ = _read(f"/proc/{pid}/environ")
    if environ is None:
        return None
    prefix = f"{MARKER}=".encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode(errors="replace")
    return None


async def pidfd_ended(pidfd: int) -> None:
    """Wait until the process of ``pidfd`` has ended (the pidfd turns readable)."""
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ended.done():
            ended.set_result(None)

    loop.add_reader(pidfd, readable)
    try:
        await ended
    finally:
        loop.remove_reader(pidfd)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class Stray:
    """A process of a spawn's tree outside its process group, held by a pidfd."""

    def __init__(self, proc: _Proc, fd: int) -> None:
        self.pid = proc.pid
        self._fd = fd
        self._ours = proc.ppid == os.getpid()

    def signal(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._fd, sig)

    async def exited(self) -> None:
        await pidfd_ended(self._fd)

    def release(self) -> None:
        """Reap it if it is the host's child and has ended; close the pidfd.
        (Once: later calls do nothing.)"""
        if self._fd < 0:
            return
        if self._ours:
            _reap(self.pid)
        os.close(self._fd)
        self._fd = -1


def _hold(proc: _Proc) -> Stray | None:
    """A pidfd on ``proc``, if it is still the process that was read."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError:  # gone already
        return None
    again = _read_stat(proc.pid)
    if again is None or again.start != proc.start:
        os.close(fd)
        return None
    return Stray(proc, fd)


def _claims(spawn: Spawn, orphan: _Proc) -> bool:
    """Whether an orphan is ``spawn``'s to end (see the module docstring)."""
    marker = next(
        (other.marker for other in _open.values() if other.pid in (orphan.sid, orphan.pgrp)),
        None,
    ) or _marker(orphan.pid)
    if marker == spawn.marker:
        return True
    if marker is not None and marker_held(marker):
        return False  # below a process the host runs itself (an MCP server's child)
    if marker is not None and marker.startswith(f"{os.getpid()}-"):
        return marker not in _open  # a spawn of ours that has ended
    return all(other is spawn for other in _open.values())  # no one's: the last spawn's


def strays(spawn: Spawn) -> list[Stray]:
    """The processes of ``spawn``'s tree outside its process group, and the
    orphans it must end with them (see the module docstring), each held by a
    pidfd; zombie orphans found on the way are reaped."""
    if not subreaper_enabled() or not _has_children():
        return []
    children = _scan()
    leaders = {other.pid: other for other in _open.values()}
    # A command is the host's child from its fork, but known by its pid only
    # once started() has run, passes of the event loop later. One that has
    # already exited by then is a zombie no different from an orphan's: while
    # any command is starting, zombies are left alone (a later scan reaps an
    # orphan's), or its owner would read its exit status as lost (255).
    starting = any(other.pid == 0 for other in _open.values())
    stack: list[_Proc] = []
    for top in children.get(os.getpid(), []):
        if kept_child(top.pid):  # the warden, an MCP server: the host's own, no orphans
            continue
        if top.pid in _unreaped:  # a command the host started: this one, or one that ended
            if leaders.get(top.pid, spawn) is spawn:
                stack.extend(children.get(top.pid, []))
        elif top.zombie:
            if not starting:
                _reap(top.pid)
        elif _claims(spawn, top):
            stack.append(top)
    found: list[Stray] = []
    while stack:
        proc = stack.pop()
        stack.extend(children.get(proc.pid, []))
        if proc.pgrp != spawn.pid and (stray := _hold(proc)) is not None:
            found.append(stray)  # (the group is signalled as one)
    return found
