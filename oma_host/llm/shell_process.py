"""One ``shell`` command run by the host: spawned in a process group of its
own, its output read as it comes, and the whole group ended when the
command is done, times out or is cancelled.

The command is an argv list (``["/bin/sh", "-c", line]``; the host builds
no shell string) started in a new session (``start_new_session``), so its pid
is the id of a group that holds everything it starts; stdin is
``/dev/null`` and stderr goes to the same pipe as stdout, so the two arrive
interleaved as the command wrote them. The output is decoded as UTF-8 (an
invalid byte becomes U+FFFD) and kept to a cap, its head and its tail
(:class:`HeadTail`), the middle counted; what arrives is also handed to a
callback, gathered for :data:`FLUSH_INTERVAL_S` at a time, so a command
that prints line by line does not send an event per line.

The group is ended with SIGTERM, then SIGKILL for whatever is left after
:data:`KILL_GRACE_S`: when the time limit passes, when the call is
cancelled (the turn was), and when the command exits leaving processes
running in the background (after :data:`LEFTOVER_GRACE_S`, since they would
hold the output pipe open). When the host is a child subreaper
(:mod:`oma_host.core.subreaper`), the members of the group that outlive the
command are reparented to it and are reaped here once they end; the command
is marked for the warden (:mod:`oma_host.core.warden`), so a descendant that
left the group still ends with the host, and known to the external bridges'
orphan sweeps as the host's own.

Python 3.11's ``Process.wait()`` waits for the pipes to close as well, which
a background descendant can put off for ever, so the command's exit is
heard through a protocol of its own (:class:`_CommandProtocol`).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oma_host.core.subreaper import subreaper_enabled
from oma_host.core.warden import MARKER, hold_marker, keep_child, release_child, release_marker
from oma_host.llm.confined import ToolError

KILL_GRACE_S = 1.0  # SIGTERM first; SIGKILL whatever is left after this
LEFTOVER_GRACE_S = 0.2  # after the command exits, for its background processes' output
FLUSH_INTERVAL_S = 0.1  # output is handed on at most this often
_POLL_S = 0.02  # how often a group being ended is looked at


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


async def _start(
    loop: asyncio.AbstractEventLoop,
    argv: Sequence[str],
    cwd: str,
    env: dict[str, str],
    output: _Output,
) -> tuple[asyncio.SubprocessTransport, _CommandProtocol]:
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
        )
    )
    try:
        return await asyncio.shield(start)
    except asyncio.CancelledError:
        # Forked before asyncio connected its pipes: let the start finish and
        # end the group, so nothing it began lives on.
        with contextlib.suppress(Exception):
            transport, protocol = await start
            await end_group(transport.get_pid(), protocol.exited)
            transport.close()
        raise


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
        if marker is not None:
            env = {**env, MARKER: marker}
        try:
            transport, protocol = await _start(loop, argv, cwd, env, output)
        except OSError as error:
            if error.filename == cwd:
                raise ToolError(f"the working directory {cwd} is not there to run in") from None
            raise ToolError(f"could not start {argv[0]}: {error.strerror or error}") from None
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
    finally:
        if marker is not None:
            release_marker(marker)


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
