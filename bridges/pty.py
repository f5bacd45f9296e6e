"""Terminal mode for process agents (``backend.terminal: true``).

Under a pseudo-terminal, a CLI that block-buffers on a pipe or wants a TTY
streams line by line. The prompt is typed with echo off and ended with
end-of-file, control characters typed literally; stdout and stderr are one
stream, with ANSI escapes removed. pexpect only spawns: reading, writing and
waiting for the exit go through the event loop, never blocking it.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import os
import re
import shlex
import shutil
import termios
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pexpect

from oma_host.bridges.common import Launch, OutputBudget
from oma_host.core.recorder import RunRecorder
from oma_host.process.groups import (
    ORPHAN_GRACE_S,
    TERM_GRACE_S,
    SpawnError,
    check_directory,
    terminate_group,
)
from oma_host.process.orphans import Spawn, pidfd_ended

if TYPE_CHECKING:
    from oma_host.core.config import ProcessInput

    Child = pexpect.spawn[bytes]

_READ_SIZE = 65536
_WRITE_SIZE = 4096
# Typed input is pushed to the reader in pieces of this many bytes (a VEOF in
# mid-line hands over what is pending without ending the input).
_TYPE_PIECE = 1024
_DIMENSIONS = (24, 80)  # rows, columns: the conventional terminal size
_POLL_S = 0.02  # exit polling interval where pidfd_open is missing
_MAX_HELD = 4096  # an unterminated escape sequence longer than this is let through

# Complete escape sequences: CSI (colours, cursor, erase); OSC, DCS, SOS, PM
# and APC strings (window titles, hyperlinks); two-character escapes (charset
# selection, keypad modes, reset); and the 8-bit CSI.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)"
    r"|\x1b[ -/]*[0-~]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# The start of an escape sequence cut off at the end of a read.
_PARTIAL_ESCAPE = re.compile(
    r"(?:\x1b(?:\[[0-?]*[ -/]*|[\]PX^_][^\x07\x1b]*\x1b?|[ -/]*)?|\x9b[0-?]*[ -/]*)\Z"
)
_CRLF = re.compile(r"\r+\n")  # ONLCR turns a program's own "\r\n" into "\r\r\n"
_TRAILING_CR = re.compile(r"\r+\Z")


class TerminalText:
    """Cleans terminal output incrementally: escape sequences removed, CRLF -> LF."""

    def __init__(self) -> None:
        self._raw = ""  # an escape sequence still waiting for its end
        self._cr = ""  # carriage returns that may belong to a CRLF

    def feed(self, text: str) -> str:
        text = self._raw + text
        partial = _PARTIAL_ESCAPE.search(text)
        if partial is not None and len(text) - partial.start() <= _MAX_HELD:
            text, self._raw = text[: partial.start()], text[partial.start() :]
        else:
            self._raw = ""
        text = self._cr + _ANSI.sub("", text)
        trailing = _TRAILING_CR.search(text)
        if trailing is not None:
            text, self._cr = text[: trailing.start()], trailing.group()
        else:
            self._cr = ""
        return _CRLF.sub("\n", text)

    def finish(self) -> str:
        """What is still held at end of output (an unfinished escape is dropped)."""
        rest, self._raw, self._cr = self._cr, "", ""
        return rest


def typed_input(text: str, eof: bytes = b"\x04", lnext: bytes = b"\x16") -> bytes:
    """The keystrokes that deliver ``text`` and then end-of-file to a canonical-mode reader.

    Every control character except newline and tab is preceded by VLNEXT so the
    line discipline passes it through (no SIGINT from a ^C, no erase from a DEL);
    each piece of a line that does not end in a newline is followed by VEOF,
    which hands it to the reader without ending the input; a final VEOF on an
    empty line is the end of file."""
    escape = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")
    out = bytearray()
    for line in text.encode(errors="replace").splitlines(keepends=True):
        for start in range(0, len(line), _TYPE_PIECE):
            piece = line[start : start + _TYPE_PIECE]
            out += escape.sub(lambda match: lnext + match.group(), piece)
            if not piece.endswith(b"\n"):
                out += eof
    return bytes(out + eof)


def _resolve(command: str, env: dict[str, str]) -> str:
    """The executable for ``command``, looked up on the run's PATH as exec would;
    raises OSError with the reason the pipe mode would give."""
    if os.sep in command:
        if not os.path.exists(command):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
        if os.path.isdir(command) or not os.access(command, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return command
    found = shutil.which(command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
    return found


def _control_chars(fd: int) -> tuple[bytes, bytes]:
    """The terminal's VEOF and VLNEXT characters (^D and ^V unless changed)."""
    try:
        chars = termios.tcgetattr(fd)[6]
        return bytes(chars[termios.VEOF]), bytes(chars[termios.VLNEXT])
    except (termios.error, OSError):
        return b"\x04", b"\x16"


@dataclass(frozen=True, eq=False)
class _Command:
    """A command running under a terminal: the pexpect child and its spawn."""

    child: Child
    spawn: Spawn


class TerminalRunner:
    """Runs a command under a pseudo-terminal, once per run; ``input`` is the
    backend's (how the prompt reaches the command)."""

    def __init__(self, input: ProcessInput) -> None:
        self._input = input
        self._running: set[_Command] = set()

    def _spawn(self, argv: list[str], cwd: str | None, env: dict[str, str]) -> _Command:
        check_directory(cwd)
        try:
            executable = _resolve(argv[0], env)
        except OSError as error:
            raise SpawnError(error.strerror or str(error)) from None

        def enter_cwd() -> None:
            # Via preexec_fn: ptyprocess reports its failure to us; a failed
            # ``cwd=`` chdir would raise inside the forked child instead.
            if cwd is not None:
                os.chdir(cwd)

        # pexpect splits the command line when there are no arguments; quote it.
        command = executable if argv[1:] else shlex.quote(executable)
        spawn = Spawn()
        try:
            with spawn.starting():
                child: Child = pexpect.spawn(
                    command,
                    argv[1:],
                    env=spawn.environment(env),
                    echo=False,
                    preexec_fn=enter_cwd,
                    dimensions=_DIMENSIONS,
                    encoding=None,
                )
        except OSError as error:
            raise SpawnError(error.strerror or str(error)) from None
        except pexpect.ExceptionPexpect as error:
            raise SpawnError(str(error)) from None
        spawn.started(_pid(child))
        # close() must never sleep in the event loop (we reap before closing).
        for target in (child, getattr(child, "ptyproc", child)):
            target.delayafterclose = 0
            target.delayafterterminate = 0
        return _Command(child, spawn)

    async def run(self, launch: Launch, recorder: RunRecorder, budget: OutputBudget) -> int:
        """Run ``launch``, typing its text when the input is stdin; the output
        goes to ``recorder`` until ``budget`` is spent (then the command is
        ended). The exit code (negative: the signal that killed it); raises
        SpawnError."""
        command = self._spawn(launch.argv, launch.cwd, launch.env)
        self._running.add(command)
        try:
            return await self._collect(command, launch.text, recorder, budget)
        finally:
            self._running.discard(command)
            await _end_group(command)

    async def _collect(
        self, command: _Command, text: str, recorder: RunRecorder, budget: OutputBudget
    ) -> int:
        loop = asyncio.get_running_loop()
        fd: int = command.child.child_fd
        os.set_blocking(fd, False)
        eof, lnext = _control_chars(fd)
        keys = typed_input(text, eof, lnext) if self._input == "stdin" else eof
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        cleaner = TerminalText()
        output_ended = loop.create_future()

        def finish_output() -> None:
            if not output_ended.done():
                recorder.text(cleaner.feed(decoder.decode(b"", final=True)) + cleaner.finish())
                output_ended.set_result(None)

        def on_readable() -> None:
            try:
                chunk = os.read(fd, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError:  # EIO: every holder of the terminal has closed it
                chunk = b""
            if not chunk:
                loop.remove_reader(fd)
                finish_output()
                return
            recorder.text(cleaner.feed(decoder.decode(budget.take(chunk))))
            if budget.exceeded:
                loop.remove_reader(fd)
                decoder.reset()  # a character cut in two at the limit is left out
                finish_output()

        loop.add_reader(fd, on_readable)
        typist = asyncio.ensure_future(_type(fd, keys))
        exited = asyncio.ensure_future(_wait_exit(command))
        try:
            await asyncio.wait({exited, output_ended}, return_when=asyncio.FIRST_COMPLETED)
            if budget.exceeded:
                await _end_group(command, close=False)
            code = await exited
            # Descendants may still hold the terminal; give them a moment, then end the group.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(output_ended), ORPHAN_GRACE_S)
            if not output_ended.done():
                await _end_group(command, close=False)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(output_ended), TERM_GRACE_S)
        finally:
            exited.cancel()
            typist.cancel()
            loop.remove_reader(fd)
        finish_output()
        return code

    async def close(self) -> None:
        """Kill every process tree this runner still has running."""
        # The fds stay open: each run's own cleanup closes them after its reader is removed.
        await asyncio.gather(*(_end_group(run, close=False) for run in list(self._running)))


async def _type(fd: int, keys: bytes) -> None:
    """Write ``keys`` to the terminal without blocking, waiting while it is full."""
    loop = asyncio.get_running_loop()
    view = memoryview(keys)
    while view:
        try:
            written = os.write(fd, view[:_WRITE_SIZE])
        except BlockingIOError:
            writable = loop.create_future()
            loop.add_writer(fd, _set_once(writable))
            try:
                await writable
            finally:
                loop.remove_writer(fd)
            continue
        except OSError:  # the terminal is gone: the command has exited
            return
        view = view[written:]


def _set_once(future: asyncio.Future[None]) -> Callable[[], None]:
    def done() -> None:
        if not future.done():
            future.set_result(None)

    return done


def _pid(child: Child) -> int:
    assert child.pid is not None  # set by a successful spawn
    return child.pid


def _exit_code(child: Child) -> int:
    """Like ``returncode``: the exit status, or minus the signal that killed it."""
    if child.exitstatus is not None:
        return int(child.exitstatus)
    return -int(child.signalstatus or 0)


async def _wait_exit(command: _Command) -> int:
    """Wait for the command to exit and reap it; returns its exit code."""
    child = command.child
    if not child.terminated:
        try:
            pidfd = os.pidfd_open(_pid(child))
        except (AttributeError, OSError):
            pidfd = None
        if pidfd is not None:
            try:
                await pidfd_ended(pidfd)
            finally:
                os.close(pidfd)
        # isalive() reaps without blocking (WNOHANG); after the pidfd fired it
        # answers at once, and without a pidfd it is polled (no event to await).
        while child.isalive():  # noqa: ASYNC110
            await asyncio.sleep(_POLL_S)
    command.spawn.reaped()
    return _exit_code(child)


async def _end_group(command: _Command, *, close: bool = True) -> None:
    """SIGTERM the command's process group and strays, then SIGKILL whatever
    is left; reap the command and (with ``close``) close the terminal."""
    # pexpect starts the child in a new session, so its pid is the group id.
    await terminate_group(command.spawn, lambda: _wait_exit(command))
    await _wait_exit(command)
    if close and not command.child.closed:
        command.child.close(force=True)
