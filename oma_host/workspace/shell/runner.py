"""One ``shell`` command run by the host: its output as it comes, its processes ended after.

The command is an argv list with stderr on stdout's pipe, its output kept to
head and tail (:class:`HeadTail`). On Linux it runs under a keeper
(:mod:`oma_host.workspace.shell.keeper`), elsewhere in a session whose group
the host ends. Its exit is heard by :class:`_CommandProtocol`, since
``Process.wait()`` also waits for pipes a background descendant may hold open
for ever.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import oma_host.workspace.shell.keeper as shell_keeper
from oma_host.process.subreaper import subreaper_enabled
from oma_host.process.warden import (
    KEEPER,
    MARKER,
    hold_marker,
    keep_child,
    release_child,
    release_marker,
)
from oma_host.workspace.confined import ToolError
from oma_host.workspace.shell.keeper import ENDING_S, KILL_GRACE_S, LEFTOVER_GRACE_S

FLUSH_INTERVAL_S = 0.1  # output is handed on at most this often
_POLL_S = 0.02  # how often a group being ended is looked at
# The keeper runs as a script of the interpreter running the host (Linux only).
_KEEPER = (
    os.path.abspath(shell_keeper.__file__) if sys.platform == "linux" and sys.executable else None
)
# What a command's ending ends, as the tool's result says it.
ENDS = "every process it started" if _KEEPER is not None else "every process of its group"


class HeadTail:
    """Text kept to ``head + tail`` characters: the first ``head`` and the
    last ``tail``, with the number of characters cut between them."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_max, self._tail_max = head, tail
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        room = self._head_max - self._head_len
        if room > 0:
            taken = text[:room]
            self._head.append(taken)
            self._head_len += len(taken)
            text = text[room:]
        if text:
            self._tail += text
            if len(self._tail) > 2 * self._tail_max:  # trimmed now and then, not per piece
                self._tail = self._tail[-self._tail_max :]

    def text(self) -> str:
        """What was kept; the cut marked ``[... N characters cut ...]``."""
        head = "".join(self._head)
        tail = self._tail[-self._tail_max :] if self._tail_max else ""
        cut = self.total - len(head) - len(tail)
        if cut > 0:
            return f"{head}\n[... {cut} characters cut ...]\n{tail}"
        return head + tail


@dataclass(frozen=True)
class Ending:
    """How a command ended: its exit code, or the signal that ended it (its
    name); whether it ran out of time; whether processes it left running
    were ended after it exited."""

    exit_code: int | None
    signal: str | None
    timed_out: bool = False
    leftovers_ended: bool = False


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _CommandProtocol(asyncio.SubprocessProtocol):
    """Hands the output pipe's data on; ``exited`` is set the moment the
    command exits (asyncio has reaped it), ``closed`` when the pipe closes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_data: Callable[[bytes], None]) -> None:
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self._on_data = on_data

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        assert isinstance(data, bytes)  # pipes are binary
        self._on_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _signal_group(group: int, sig: int) -> bool:
    """Signal a process group (0: only ask whether it is there); False when
    no process of it is left."""
    try:
        os.killpg(group, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _reap_group(group: int) -> None:
    """Collect the members of ``group`` that are the host's children (the
    command's orphans, reparented to the subreaper) and have ended. Called
    only once the command itself has been reaped, so asyncio's own wait for
    it is never taken."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-group, os.WNOHANG)[0] > 0:
            pass


def _group_alive(group: int, leader_reaped: bool) -> bool:
    if leader_reaped:
        _reap_group(group)  # a zombie member would still answer the signal
    return _signal_group(group, 0)


async def end_group(group: int, exited: asyncio.Future[None]) -> None:
    """SIGTERM the group, wait up to KILL_GRACE_S for all of it to end, then
    SIGKILL what is left. Cancelled while waiting, it kills at once and
    lets the cancellation go on."""
    loop = asyncio.get_running_loop()
    if not _signal_group(group, signal.SIGTERM):
        return
    deadline = loop.time() + KILL_GRACE_S
    try:
        # Polled: no event tells of the end of a group's members, which may
        # not be the host's children at all.
        while _group_alive(group, exited.done()) and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL_S)
    finally:
        # Also when cancelled: nothing of the group may outlive the call.
        _signal_group(group, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_GRACE_S):
            await asyncio.shield(exited)
    _reap_group(group)


class _Output:
    """The command's output as it arrives: decoded, kept to the cap, and
    handed to ``on_output`` at most every FLUSH_INTERVAL_S."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, kept: HeadTail, on_output: Callable[[str], None]
    ) -> None:
        self._loop = loop
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.kept = kept
        self._on_output = on_output
        self._pending: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    def data(self, data: bytes) -> None:
        self._text(self._decoder.decode(data))

    def _text(self, text: str) -> None:
        if not text:
            return
        self.kept.add(text)
        self._pending.append(text)
        if self._timer is None:
            self._timer = self._loop.call_later(FLUSH_INTERVAL_S, self.flush)

    def flush(self) -> None:
        self._timer = None
        if self._pending:
            text = "".join(self._pending)
            self._pending.clear()
            self._on_output(text)

    def finish(self) -> None:
        """The output has ended: what the decoder holds, then all that is pending."""
        self._text(self._decoder.decode(b"", final=True))
        if self._timer is not None:
            self._timer.cancel()
        self.flush()


# Ends what a start cancelled midway began.
Ender = Callable[[asyncio.SubprocessTransport, _CommandProtocol], Awaitable[None]]


async def _start(
    loop: asyncio.AbstractEventLoop,
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    output: _Output,
    end: Ender,
    *,
    name: str,
    pass_fds: tuple[int, ...] = (),
) -> tuple[asyncio.SubprocessTransport, _CommandProtocol]:
    """Start ``argv`` in a session of its own, its output to ``output``.
    ToolError (saying ``name``) when it cannot be started; cancelled, what
    was started is ended with ``end`` before the cancellation goes on."""
    start = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _CommandProtocol(loop, output.data),
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    )
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        # Forked before asyncio connected its pipes: let the start finish and
        # end what it began, so nothing of it lives on.
        with contextlib.suppress(Exception):
            transport, protocol = await start
            await end(transport, protocol)
            transport.close()
        raise
    except OSError as error:
        if error.filename == cwd:
            raise ToolError(f"the working directory {cwd} is not there to run in") from None
        raise ToolError(f"could not start {name}: {error.strerror or error}") from None


async def run_command(
    argv: Sequence[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    kept: HeadTail,
    on_output: Callable[[str], None],
) -> Ending:
    """Run ``argv`` as the module docstring says; its output goes to ``kept``
    and ``on_output``. ToolError when it cannot be started."""
    loop = asyncio.get_running_loop()
    output = _Output(loop, kept, on_output)
    marker = hold_marker("shell") if subreaper_enabled() else None
    try:
        if _KEEPER is not None:
            return await _run_kept(loop, _KEEPER, argv, cwd, env, marker, timeout_s, output)
        if marker is not None:
            env = {**env, MARKER: marker}
        return await _run_grouped(loop, argv, cwd, env, timeout_s, output)
    finally:
        if marker is not None:
            release_marker(marker)


# -- under a keeper (Linux) -------------------------------------------------------------


@dataclass(frozen=True)
class _Report:
    """What a keeper wrote to its status pipe: the command's pid, and its
    last line's words (how the command ended; None if it never said)."""

    command: int | None
    last: list[str] | None


def _read_report(fd: int) -> _Report:
    """The report of a keeper that has exited (the pipe's writer is closed)."""
    data = b""
    os.set_blocking(fd, False)
    with contextlib.suppress(BlockingIOError):
        while piece := os.read(fd, 4096):
            data += piece
    command, last = None, None
    for line in data.decode(errors="replace").splitlines():
        words = line.split(" ", 2)
        if words[0] == "started" and len(words) == 2 and words[1].isdigit():
            command = int(words[1])
        elif words[0] in ("exit", "signal", "unknown", "failed"):
            last = words
    return _Report(command, last)


def _ending(report: _Report, timed_out: bool) -> Ending | None:
    """How the command ended, from the keeper's last line; None when it never
    said (the keeper was killed)."""
    last = report.last
    if last is None:
        return None
    leftovers = last[-1] == "1"
    if last[0] == "exit":
        return Ending(int(last[1]), None, timed_out, leftovers)
    if last[0] == "signal":
        return Ending(None, signal_name(int(last[1])), timed_out, leftovers)
    return Ending(None, None, timed_out, leftovers)


async def _stop_keeper(transport: asyncio.SubprocessTransport, protocol: _CommandProtocol) -> None:
    """Tell the keeper to end the command's tree (SIGTERM) and wait up to
    ENDING_S for it to exit; SIGKILL it if it has not."""
    keeper = transport.get_pid()
    if protocol.exited.done():
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(keeper, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(ENDING_S):
            await asyncio.shield(protocol.exited)
            return
    with contextlib.suppress(ProcessLookupError):
        os.kill(keeper, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(KILL_GRACE_S):
            await asyncio.shield(protocol.exited)


def _close_when_exited(
    transport: asyncio.SubprocessTransport,
    protocol: _CommandProtocol,
    keeper: int,
    marker: str | None,
) -> None:
    """Close the keeper's transport once it has exited, and let go of it
    (its pid and its marker): closed earlier, asyncio would kill it, and the
    tree it is ending would be left."""

    def close(_: object = None) -> None:
        transport.close()
        release_child(keeper)
        if marker is not None:
            release_marker(marker)

    if protocol.exited.done():
        close()
    else:  # a second cancellation while it ends the tree: it finishes on its own
        protocol.exited.add_done_callback(close)


async def _run_kept(
    loop: asyncio.AbstractEventLoop,
    keeper_script: str,
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    marker: str | None,
    timeout_s: float,
    output: _Output,
) -> Ending:
    # The keeper's own marker, held: the bridges' orphan sweeps leave it be
    # before it is known as the host's child (keep_child), and the warden
    # spares it.
    keeper_marker = hold_marker(KEEPER) if marker is not None else None
    if keeper_marker is not None:
        env = {**env, MARKER: keeper_marker}
    status, status_writer = os.pipe()
    try:
        keeper_argv = [
            sys.executable,
            "-I",
            "-S",
            keeper_script,
            str(os.getpid()),
            str(status_writer),
            f"{MARKER}={marker}" if marker is not None else "-",
            "--",
            *argv,
        ]
        try:
            transport, protocol = await _start(
                loop,
                keeper_argv,
                cwd,
                env,
                output,
                _stop_keeper,
                name=argv[0],
                pass_fds=(status_writer,),
            )
        except BaseException:
            if keeper_marker is not None:
                release_marker(keeper_marker)
            raise
        finally:
            os.close(status_writer)
        keeper = transport.get_pid()
        keep_child(keeper)
        try:
            return await _kept_until_done(loop, transport, protocol, status, timeout_s, argv[0])
        finally:
            _close_when_exited(transport, protocol, keeper, keeper_marker)
            output.finish()
    finally:
        os.close(status)


async def _kept_until_done(
    loop: asyncio.AbstractEventLoop,
    transport: asyncio.SubprocessTransport,
    protocol: _CommandProtocol,
    status: int,
    timeout_s: float,
    name: str,
) -> Ending:
    """Wait for the keeper (told to stop at the time limit or when
    cancelled); how the command ended, as the keeper says (ToolError, saying
    ``name``, when it could not be started)."""
    timed_out = False
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.shield(protocol.exited)
    except TimeoutError:
        timed_out = True
        await _stop_keeper(transport, protocol)
    except asyncio.CancelledError:
        await _stop_keeper(transport, protocol)
        await _end_unkept(loop, _read_report(status))
        raise
    report = _read_report(status)
    if report.last is not None and report.last[0] == "failed":
        raise ToolError(f"could not start {name}: {report.last[-1]}")
    await _end_unkept(loop, report)
    await _read_to_the_end(protocol)  # what the ended tree wrote last
    return _ending(report, timed_out) or Ending(None, None, timed_out)


async def _end_unkept(loop: asyncio.AbstractEventLoop, report: _Report) -> None:
    """End the command's process group when its keeper was killed before it
    said how the command ended (a command can kill its parent): its tree is
    the host's to end now."""
    if report.last is None and report.command is not None:
        await end_group(report.command, _done(loop))


def _done(loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    done: asyncio.Future[None] = loop.create_future()
    done.set_result(None)
    return done


# -- in a process group (elsewhere) ----------------------------------------------------


async def _end_started_group(
    transport: asyncio.SubprocessTransport, protocol: _CommandProtocol
) -> None:
    await end_group(transport.get_pid(), protocol.exited)


async def _run_grouped(
    loop: asyncio.AbstractEventLoop,
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    output: _Output,
) -> Ending:
    transport, protocol = await _start(
        loop, argv, cwd, env, output, _end_started_group, name=argv[0]
    )
    group = transport.get_pid()
    keep_child(group)
    try:
        return await _wait(group, transport, protocol, timeout_s)
    except asyncio.CancelledError:
        await end_group(group, protocol.exited)
        raise
    finally:
        transport.close()  # the pipe; the command has exited (or is killed by this)
        release_child(group)
        output.finish()


async def _read_to_the_end(protocol: _CommandProtocol) -> None:
    """Wait up to LEFTOVER_GRACE_S for the output pipe to close (everyone
    holding it has exited), so what is left in it is read."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(LEFTOVER_GRACE_S):
            await asyncio.shield(protocol.closed)


async def _wait(
    group: int,
    transport: asyncio.SubprocessTransport,
    protocol: _CommandProtocol,
    timeout_s: float,
) -> Ending:
    """Wait for the command; end its group on timeout or when it leaves
    processes behind. The Ending, from the command's exit status."""
    timed_out = leftovers = False
    try:
        async with asyncio.timeout(timeout_s):
            await asyncio.shield(protocol.exited)
    except TimeoutError:
        timed_out = True
        await end_group(group, protocol.exited)
    else:
        await _read_to_the_end(protocol)
        if _group_alive(group, leader_reaped=True):
            leftovers = True
            await end_group(group, protocol.exited)
    await _read_to_the_end(protocol)  # what the ended group wrote last
    code = transport.get_returncode()
    if code is None:  # not heard of within the grace after SIGKILL (a process stuck in the kernel)
        return Ending(None, "SIGKILL", timed_out, leftovers)
    if code < 0:
        return Ending(None, signal_name(-code), timed_out, leftovers)
    return Ending(code, None, timed_out, leftovers)
