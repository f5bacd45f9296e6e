"""The keeper of one ``shell`` command (Linux): it ends everything the command started.

A small process between host and command, in a session of its own and a child
subreaper, so the command's descendants stay in its tree whatever they do to
their session, group or environment. It ends that tree when the command exits
leaving processes running, when told to, and when the host is gone (SIGKILL
too). Standard library only: the host imports its constants.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from typing import NamedTuple

KILL_GRACE_S = 1.0  # SIGTERM first; SIGKILL whatever is left after this
LEFTOVER_GRACE_S = 0.2  # after the command exits, for its background processes' output
# The most a keeper told to stop takes to end its tree and exit: the host
# waits this long before it gives up on it.
ENDING_S = LEFTOVER_GRACE_S + KILL_GRACE_S + 2.0

_POLL_S = 0.02  # how often a tree being waited for is looked at
_HOST_POLL_S = 0.5  # how often the host is looked for, without a pidfd of it
_KILL_ROUNDS = 5  # SIGKILL sweeps, for processes that forked while being ended
_PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
_STOPS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
# Signals Python ignores at start, which a started program would inherit
# ignored (subprocess's restore_signals puts back the same ones).
_RESTORED = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)


class _Proc(NamedTuple):
    pid: int
    ppid: int
    start: int  # clock ticks after boot: with the pid, one process
    zombie: bool


def _stat(pid: int | str) -> _Proc | None:
    """A process as ``/proc`` tells of it; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            data = file.read()
    except OSError:
        return None
    # The command name is in parentheses and may hold anything: split after it.
    fields = data[data.rfind(b")") + 2 :].split()
    return _Proc(int(pid), int(fields[1]), int(fields[19]), fields[0] == b"Z")


def _tree(root: int) -> list[_Proc]:
    """Every process below ``root`` that has not ended (one pass over /proc)."""
    children: dict[int, list[_Proc]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and (proc := _stat(name)) is not None:
            children.setdefault(proc.ppid, []).append(proc)
    found: list[_Proc] = []
    stack = list(children.get(root, []))
    while stack:
        proc = stack.pop()
        stack.extend(children.get(proc.pid, []))
        if not proc.zombie:
            found.append(proc)
    return found


def _alive(proc: _Proc) -> bool:
    again = _stat(proc.pid)
    return again is not None and again.start == proc.start and not again.zombie


def _signal(proc: _Proc, sig: signal.Signals) -> None:
    """Signal ``proc`` if it is still the process that was read."""
    try:
        fd = os.pidfd_open(proc.pid)
    except OSError as error:  # gone already, or no pidfds (Linux before 5.3)
        if error.errno == errno.ENOSYS and _alive(proc):
            with contextlib.suppress(OSError):
                os.kill(proc.pid, sig)
        return
    try:
        if _alive(proc):
            signal.pidfd_send_signal(fd, sig)
    except OSError:
        pass
    finally:
        os.close(fd)


def _become_subreaper() -> None:
    """Make the keeper a child subreaper. Where the kernel refuses, the
    command still runs: the keeper then ends what stays below it, and the
    host's own subreaper and warden what leaves."""
    import ctypes  # only here: the rest of the keeper needs none of it

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class _Keeper:
    """The keeper's state: the host it watches, the command, its status."""

    def __init__(self, host: int, status_fd: int) -> None:
        self.me = os.getpid()
        self.host = host
        self.status_fd = status_fd
        self.command = 0
        self.status: int | None = None  # the command's wait status, once reaped
        self.stopped = False  # told to stop, or the host is gone
        self._wake, wake = os.pipe()
        os.set_blocking(self._wake, False)
        os.set_blocking(wake, False)
        signal.set_wakeup_fd(wake)
        for sig in (signal.SIGCHLD, *_STOPS):
            signal.signal(sig, lambda number, frame: None)  # heard through the wakeup fd
        try:
            self._host_fd: int | None = os.pidfd_open(host)
        except OSError:  # an older kernel: the host is looked for now and then
            self._host_fd = None

    def say(self, line: str) -> None:
        with contextlib.suppress(OSError):  # the host is gone: no one reads it
            os.write(self.status_fd, f"{line}\n".encode())

    def _reap(self) -> None:
        """Collect every child that has ended; the command's status is kept."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.command:
                self.status = status

    def _heard(self, readable: list[int]) -> None:
        """Note a stop signal or the host's end among what woke the keeper."""
        if self._wake in readable:
            with contextlib.suppress(BlockingIOError):
                while numbers := os.read(self._wake, 64):
                    if not _STOPS.isdisjoint(numbers):
                        self.stopped = True
        if (self._host_fd is not None and self._host_fd in readable) or os.getppid() != self.host:
            self.stopped = True

    def wait_until(
        self, done: Callable[[], bool], seconds: float | None, *, poll: bool, stoppable: bool
    ) -> bool:
        """Wait until ``done()`` (looked at every _POLL_S when ``poll``, else
        when a signal comes), for at most ``seconds`` (None: no limit), or,
        when ``stoppable``, until the keeper is told to stop; True when
        ``done()``."""
        deadline = None if seconds is None else time.monotonic() + seconds
        watched = [self._wake] + ([self._host_fd] if self._host_fd is not None else [])
        while True:
            self._reap()
            if done():
                return True
            if stoppable and self.stopped:
                return False
            wait = _POLL_S if poll else _HOST_POLL_S if self._host_fd is None else None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                wait = left if wait is None else min(wait, left)
            readable, _, _ = select.select(watched, [], [], wait)
            self._heard(readable)

    def start(self, argv: list[str], marker: str) -> bool:
        """Start the command; False (and ``failed ...`` said) when it cannot
        be. Its pid is said before it runs, so the host knows its process
        group even if the command kills the keeper at once."""
        env = dict(os.environ)
        if marker != "-":
            name, _, value = marker.partition("=")
            env[name] = value
        gate, go = os.pipe()  # the command waits for the keeper to have said its pid
        failures, failed = os.pipe()  # closed by a successful exec, else the errno
        pid = os.fork()
        if pid == 0:  # the command, until it execs
            try:
                os.close(go)
                os.close(failures)
                os.read(gate, 1)
                os.setpgid(0, 0)
                signal.set_wakeup_fd(-1)
                for sig in (*_RESTORED, signal.SIGCHLD, *_STOPS):
                    signal.signal(sig, signal.SIG_DFL)
                os.execvpe(argv[0], argv, env)
            except OSError as error:
                os.write(failed, str(error.errno).encode())
            finally:
                os._exit(127)
        os.close(gate)
        os.close(failed)
        self.command = pid
        self.say(f"started {pid}")
        os.close(go)
        reported = os.read(failures, 64)
        os.close(failures)
        if reported:
            number = int(reported)
            self.say(f"failed {number} {os.strerror(number)}")
            os.waitpid(pid, 0)
            return False
        return True

    def end_tree(self) -> None:
        """End every process of the keeper's tree (see the module docstring)."""
        held = _tree(self.me)
        for proc in held:
            _signal(proc, signal.SIGTERM)
        self._wait_ended(held)
        for _ in range(_KILL_ROUNDS):
            held = _tree(self.me)
            if not held:
                break
            for proc in held:
                _signal(proc, signal.SIGKILL)
            self._wait_ended(held)
        self._reap()

    def _wait_ended(self, held: list[_Proc]) -> None:
        """Wait up to KILL_GRACE_S for every process of ``held`` to end."""
        self.wait_until(
            lambda: not any(_alive(proc) for proc in held), KILL_GRACE_S, poll=True, stoppable=False
        )

    def ending(self, leftovers: bool) -> str:
        """How the command ended, as STATUS_FD's last line says it."""
        status, flag = self.status, int(leftovers)
        if status is None:
            return f"unknown {flag}"
        if os.WIFSIGNALED(status):
            return f"signal {os.WTERMSIG(status)} {flag}"
        return f"exit {os.waitstatus_to_exitcode(status)} {flag}"


def main(argv: list[str]) -> int:
    host, status_fd, marker = int(argv[1]), int(argv[2]), argv[3]
    command = argv[5:]
    os.set_inheritable(status_fd, False)  # the command does not get it
    keeper = _Keeper(host, status_fd)
    _become_subreaper()
    if keeper.stopped or os.getppid() != host or not keeper.start(command, marker):
        return 0
    keeper.wait_until(lambda: keeper.status is not None, None, poll=False, stoppable=True)
    leftovers = False
    if not keeper.stopped:
        # The command has exited: its background processes get a moment.
        settled = keeper.wait_until(
            lambda: not _tree(keeper.me), LEFTOVER_GRACE_S, poll=True, stoppable=True
        )
        leftovers = not settled and not keeper.stopped
    if keeper.stopped or leftovers:
        keeper.end_tree()
    keeper.say(keeper.ending(leftovers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
