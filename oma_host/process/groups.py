"""Process groups for the external bridges: spawn a command, hear its exit, end its group.

Each command runs in a group of its own, so SIGTERM, then SIGKILL, to the group
ends every descendant; those that left the group are found by
:mod:`oma_host.process.orphans`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from oma_host.process.orphans import Spawn, Stray, strays

TERM_GRACE_S = 1.0  # SIGTERM first; SIGKILL whatever is left after this
ORPHAN_GRACE_S = 0.2  # after exit, how long descendants may hold stdout open
_KILL_ROUNDS = 3  # SIGKILL sweeps for strays that forked while being ended
_PIPE_LIMIT = 2**16


class SpawnError(Exception):
    """A command that could not be started; the message says why."""


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(code: int) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    return f"exited with code {code}" if code >= 0 else f"was killed by {signal_name(-code)}"


def check_directory(cwd: str | None) -> None:
    """Refuse a working directory that is not there, said plainly: the exec
    error would blame the command instead."""
    if cwd is not None and not os.path.isdir(cwd):
        raise SpawnError(f"the working directory {cwd!r} does not exist")


def signal_group(pid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class StdoutSink(Protocol):
    """Takes a child's stdout as it arrives, in the event loop's read callback:
    no StreamReader in between, and no task that must be woken to read it."""

    def stdout_data(self, data: bytes) -> None: ...

    def stdout_ended(self, error: Exception | None) -> None: ...


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The standard protocol, plus a future set the moment the process exits.
    (On Python 3.11, ``Process.wait()`` also waits for every pipe to close,
    which a background descendant can hold open for ever.) With a ``sink``,
    stdout goes to it instead of the process's StreamReader."""

    def __init__(
        self,
        limit: int,
        loop: asyncio.AbstractEventLoop,
        spawn: Spawn,
        sink: StdoutSink | None = None,
    ) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()
        self.spawn = spawn
        self.sink = sink

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1 and self.sink is not None:
            assert isinstance(data, bytes)  # pipes are binary
            self.sink.stdout_data(data)
        else:
            super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and self.sink is not None:
            self.sink.stdout_ended(exc)
        super().pipe_connection_lost(fd, exc)  # closes the transport once all is done

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.spawn.started(transport.get_pid())

    def process_exited(self) -> None:
        super().process_exited()  # asyncio has reaped it
        self.spawn.reaped()
        if not self.exited.done():
            self.exited.set_result(None)


class GroupProcess(asyncio.subprocess.Process):
    """A process :func:`spawn_group` started: the leader of a process group
    of its own, with a future set the moment it exits."""

    def __init__(
        self,
        transport: asyncio.SubprocessTransport,
        protocol: _ExitAwareProtocol,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        super().__init__(transport, protocol, loop)
        self.transport = transport
        self.exited = protocol.exited
        self.spawn = protocol.spawn
        if protocol.sink is not None:
            self.stdout = None  # read by the sink: the StreamReader gets nothing


async def spawn_group(
    argv: Sequence[str],
    *,
    cwd: str | None,
    env: dict[str, str],
    stdin: int = asyncio.subprocess.PIPE,
    limit: int = _PIPE_LIMIT,
    stdout_sink: StdoutSink | None = None,
) -> GroupProcess:
    """Start ``argv`` (never through a shell) in a new session, so its pid is
    the id of a group holding every descendant; stdout and stderr are pipes
    read with lines of up to ``limit`` bytes, stdout by ``stdout_sink``
    instead when there is one. Raises SpawnError."""
    check_directory(cwd)
    loop = asyncio.get_running_loop()
    spawn = Spawn()
    try:
        with spawn.starting():
            start = asyncio.ensure_future(
                loop.subprocess_exec(
                    lambda: _ExitAwareProtocol(limit, loop, spawn, stdout_sink),
                    *argv,
                    stdin=stdin,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=cwd,
                    env=spawn.environment(env),
                    start_new_session=True,
                )
            )
            try:
                transport, protocol = await asyncio.shield(start)
            except asyncio.CancelledError:
                # The command is forked before asyncio has connected its pipes;
                # cancelled in between, asyncio kills the command alone, and
                # whatever it already started lives on. Let the start finish and
                # end the whole group before the cancellation goes on.
                await _end_once_started(start, loop)
                raise
    except OSError as error:
        raise SpawnError(error.strerror or str(error)) from None
    except ValueError as error:  # e.g. a NUL byte in an argument or the environment
        raise SpawnError(str(error)) from None
    return GroupProcess(transport, protocol, loop)


# Groups being ended after a cancelled start, kept until they are (a second
# cancellation leaves the ending to run on its own).
_ending: set[asyncio.Task[None]] = set()


async def _end_once_started(
    start: asyncio.Future[tuple[asyncio.SubprocessTransport, _ExitAwareProtocol]],
    loop: asyncio.AbstractEventLoop,
) -> None:
    """End the group of a command whose start was cancelled, once it has started."""

    async def end() -> None:
        try:
            transport, protocol = await start
        except Exception:  # it never started: nothing to end
            return
        await end_process_group(GroupProcess(transport, protocol, loop))
        transport.close()  # its pipes too: nobody else holds the transport

    task = asyncio.ensure_future(end())
    _ending.add(task)
    task.add_done_callback(_ending.discard)
    await asyncio.shield(task)


async def wait_for_exit(process: GroupProcess) -> int:
    """The exit code as soon as the process has exited, even while a
    descendant still holds its pipes."""
    # Shielded: a timeout around this wait must not cancel the future itself.
    await asyncio.shield(process.exited)
    code = process.returncode
    assert code is not None  # set before the protocol hears of the exit
    return code


async def terminate_group(spawn: Spawn, exited: Callable[[], Awaitable[object]]) -> bool:
    """SIGTERM the group of ``spawn`` and its strays (descendants that left
    the group), wait up to TERM_GRACE_S for ``exited()`` and the strays, then
    SIGKILL whatever is left (the leader may be gone while descendants
    linger). False when the group no longer existed."""
    held = strays(spawn)
    try:
        running = signal_group(spawn.pid, signal.SIGTERM)
        for stray in held:
            stray.signal(signal.SIGTERM)
        if not running and not held:
            return False
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TERM_GRACE_S):
                    await asyncio.gather(
                        *([exited()] if running else []), *(stray.exited() for stray in held)
                    )
        except asyncio.CancelledError:
            # Whoever waited for the ending gave up on it (a caller cancelled
            # during a run's cleanup): no grace is left, and nothing of the
            # group may outlive it.
            signal_group(spawn.pid, signal.SIGKILL)
            for stray in held:
                stray.signal(signal.SIGKILL)
            raise
        signal_group(spawn.pid, signal.SIGKILL)
        # Strays may have forked, or left the group, while being ended.
        for _ in range(_KILL_ROUNDS):
            await _kill(held)
            if not (held := strays(spawn)):
                break
        return running
    finally:
        for stray in held:
            stray.release()
        spawn.close()


async def _kill(held: list[Stray]) -> None:
    """SIGKILL each stray, wait a moment for the ends, and reap them."""
    for stray in held:
        stray.signal(signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(TERM_GRACE_S):
            await asyncio.gather(*(stray.exited() for stray in held))
    for stray in held:
        stray.release()


async def end_process_group(process: GroupProcess) -> None:
    """End ``process`` and its whole group; see :func:`terminate_group`.
    Cancelled, it kills the group at once and sees the end through before
    the cancellation goes on."""
    try:
        if await terminate_group(process.spawn, lambda: wait_for_exit(process)):
            await _exit_within_grace(process)
    except asyncio.CancelledError:
        # terminate_group has sent SIGKILL. Wait for the exit (a moment) and
        # close the pipes, while the event loop still runs: the caller may be
        # about to close it, and a transport closed after its loop fails.
        await _exit_within_grace(process)
        if process.returncode is not None:  # reaped: closing reaps nothing behind asyncio
            process.transport.close()
        raise


async def _exit_within_grace(process: GroupProcess) -> None:
    """Wait up to TERM_GRACE_S for ``process`` to exit."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(TERM_GRACE_S):
            await wait_for_exit(process)
