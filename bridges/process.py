"""The process bridge: a fresh subprocess per run (PROTOCOL.md section 9).

The prompt (``systemPrompt`` and the text, joined by a blank line) goes to the
command on stdin, as its last argument, or not at all. stdout streams as
``text`` events and becomes the output; exit 0 is success; a non-zero exit or
a signal fails the run with the stderr text, secrets redacted. Each run gets
its own process group, so cancellation, timeouts and ``close`` kill the whole
tree, not just the direct child. With ``terminal: true`` the run is delegated
to ``bridges.pty`` (a pseudo-terminal), which shares the prompt,
spawn-failure and exit-status rules kept here.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bridges import compose_prompt
from oma_host.core.config import AgentConfig, ProcessBackend
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult, RunRecorder

if TYPE_CHECKING:
    from bridges.pty import TerminalRunner

_READ_SIZE = 65536
STDERR_LIMIT = 16384  # the tail of stderr kept for a failure message (ACP too)
TERM_GRACE_S = 1.0  # SIGTERM first; SIGKILL whatever is left after this
ORPHAN_GRACE_S = 0.2  # after exit, how long descendants may hold stdout open
_REAP_POLL_S = 0.01  # exit polling for processes not made by spawn_process


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class ProcessBridge:
    """Runs ``backend.command`` once per run; see the module docstring."""

    external = True

    def __init__(self, config: AgentConfig, backend: ProcessBackend) -> None:
        self._config = config
        self._backend = backend
        self._redactor = Redactor.for_config(config)
        self._running: set[asyncio.subprocess.Process] = set()
        self._terminal: TerminalRunner | None = None

    def argv(self, prompt: str) -> list[str]:
        """The command line of one run (the prompt is last with ``input: "argument"``)."""
        argv = [self._backend.command, *self._backend.args]
        if self._backend.input == "argument":
            argv.append(prompt)
        return argv

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult:
        del messages, streaming  # text only; stdout streams either way
        if self._backend.input != "none" and not prompt.strip():
            message = f"agent {self._config.name!r}: the prompt is empty; nothing to send"
            return recorder.result("error", message, output=message, error_kind="input")
        text = compose_prompt(self._config.system_prompt, prompt)
        cwd = self._backend.cwd or self._config.cwd
        if cwd is not None and not os.path.isdir(cwd):  # noqa: ASYNC240 (one stat)
            # Said plainly: the spawn error would blame the command instead.
            return self.spawn_failure(recorder, f"the working directory {cwd!r} does not exist")
        if self._backend.terminal:
            if self._terminal is None:
                from bridges.pty import TerminalRunner

                self._terminal = TerminalRunner(self, self._config, self._backend)
            return await self._terminal.run(text, recorder)
        try:
            process = await spawn_process(
                *self.argv(text),
                stdin=asyncio.subprocess.PIPE
                if self._backend.input == "stdin"
                else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=cwd,
                env={**os.environ, **self._backend.env},
                start_new_session=True,
            )
        except OSError as error:
            return self.spawn_failure(recorder, error.strerror or str(error))
        except ValueError as error:  # e.g. a NUL byte in an argument or the environment
            return self.spawn_failure(recorder, str(error))
        self._running.add(process)
        try:
            return await self._collect(process, text, recorder)
        finally:
            self._running.discard(process)
            await end_process_group(process)

    async def _collect(
        self, process: asyncio.subprocess.Process, text: str, recorder: RunRecorder
    ) -> AgentRunResult:
        assert process.stdout is not None and process.stderr is not None
        feeder = asyncio.ensure_future(_feed(process, text))
        stdout = asyncio.ensure_future(_read_text(process.stdout, recorder.text))
        stderr_parts: list[str] = []
        stderr = asyncio.ensure_future(_read_text(process.stderr, stderr_parts.append))
        readers = [feeder, stdout, stderr]
        try:
            code = await wait_for_exit(process)
            # Descendants may still hold the pipes; give them a moment, then end the group.
            _, pending = await asyncio.wait(readers, timeout=ORPHAN_GRACE_S)
            if pending:
                await end_process_group(process)
                await asyncio.wait(pending, timeout=TERM_GRACE_S)
        finally:
            for task in readers:
                task.cancel()
        return self.exit_result(recorder, code, "".join(stderr_parts))

    def spawn_failure(self, recorder: RunRecorder, reason: str) -> AgentRunResult:
        """The failed run of a command that could not be started."""
        message = self._redactor.redact(f"could not start {self._backend.command!r}: {reason}")
        return recorder.result("error", message, output=message, error_kind="spawn")

    def exit_result(self, recorder: RunRecorder, code: int, detail: str) -> AgentRunResult:
        """The result for exit status ``code`` (negative: killed by that signal);
        ``detail`` (stderr, or the terminal's output) explains a failure."""
        if code == 0:
            output = recorder.output
            recorder.messages.append(
                {"role": "assistant", "content": [{"type": "text", "text": output}]}
            )
            return recorder.result()
        how = f"exited with code {code}" if code > 0 else f"was killed by {signal_name(-code)}"
        detail = detail[-STDERR_LIMIT:].strip()
        message = f"{self._backend.command} {how}" + (f": {detail}" if detail else "")
        message = self._redactor.redact(message)
        return recorder.result("error", message, output=message, error_kind="process")

    async def close(self) -> None:
        """Kill every process tree this bridge still has running."""
        await asyncio.gather(
            *(end_process_group(process) for process in list(self._running)),
            *([self._terminal.close()] if self._terminal is not None else []),
        )


async def _feed(process: asyncio.subprocess.Process, text: str) -> None:
    """Write the prompt to stdin and close it, so the command sees end-of-file."""
    if process.stdin is None:
        return
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            # A lone surrogate (valid in JSON, not in UTF-8) becomes "?".
            process.stdin.write(text.encode(errors="replace"))
            await process.stdin.drain()
    finally:
        process.stdin.close()


async def _read_text(stream: asyncio.StreamReader, sink: Callable[[str], object]) -> None:
    """Decode a pipe as UTF-8 (bad bytes replaced) and hand each piece to ``sink``."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.read(_READ_SIZE):
        if text := decoder.decode(chunk):
            sink(text)
    if tail := decoder.decode(b"", final=True):
        sink(tail)


def signal_group(pid: int, sig: signal.Signals) -> bool:
    """Signal a process group; False when it no longer exists."""
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The standard protocol, plus a future set the moment the process exits.
    (On Python 3.11, ``Process.wait()`` also waits for every pipe to close,
    which a background descendant can hold open for ever.)"""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


async def spawn_process(*argv: str, **options: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec`` whose exit :func:`wait_for_exit`
    hears at once."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _ExitAwareProtocol(limit=2**16, loop=loop), *argv, **options
    )
    return asyncio.subprocess.Process(transport, protocol, loop)


def _returncode(process: asyncio.subprocess.Process) -> int | None:
    return process.returncode


async def wait_for_exit(process: asyncio.subprocess.Process) -> int:
    """The exit code as soon as the process has exited, even while a
    descendant still holds its pipes."""
    protocol = getattr(process, "_protocol", None)
    if isinstance(protocol, _ExitAwareProtocol):
        # Shielded: a timeout around this wait must not cancel the future itself.
        await asyncio.shield(protocol.exited)
    # A call, not the attribute: the child watcher sets it behind mypy's back.
    while (code := _returncode(process)) is None:  # noqa: ASYNC110 (no event to wait on)
        # Spawned elsewhere (create_subprocess_exec): poll for the exit.
        await asyncio.sleep(_REAP_POLL_S)
    return code


async def end_process_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, then SIGKILL it if anything is left."""
    if not signal_group(process.pid, signal.SIGTERM):
        return
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(TERM_GRACE_S):
            await wait_for_exit(process)
    # The leader may be gone while descendants linger in its group.
    signal_group(process.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(TERM_GRACE_S):
            await wait_for_exit(process)
