"""The process bridge: a fresh subprocess per run (docs/protocol.md, "External backends").

The prompt goes on stdin, as the last argument, or not at all; stdout streams
as ``text`` and exit 0 is success. Each run gets its own process group, so
cancellation, timeouts and ``close`` end the whole tree, and output past
``backend.maxOutputBytes`` ends it with ``errorInfo.kind: "output_limit"``.
``terminal: true`` runs the command under :mod:`oma_host.bridges.pty` with the
same rules.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from oma_host.bridges.common import (
    Launch,
    OutputBudget,
    StderrTail,
    compose_prompt,
    could_not_start,
    empty_prompt,
    failed,
    over_limit,
    replied,
    tail,
    working_directory,
)
from oma_host.core.config import AgentConfig, ProcessBackend
from oma_host.core.messages import LLMMessage
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult
from oma_host.process.groups import (
    ORPHAN_GRACE_S,
    TERM_GRACE_S,
    GroupProcess,
    SpawnError,
    describe_exit,
    end_process_group,
    spawn_group,
    wait_for_exit,
)

if TYPE_CHECKING:
    from oma_host.bridges.pty import TerminalRunner

_READ_SIZE = 65536


class ProcessBridge:
    """Runs ``backend.command`` once per run; see the module docstring."""

    def __init__(self, config: AgentConfig, backend: ProcessBackend) -> None:
        self._config = config
        self._backend = backend
        self._redactor = Redactor.for_config(config)
        self._running: set[GroupProcess] = set()
        self._terminal: TerminalRunner | None = None

    def _argv(self, prompt: str) -> list[str]:
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
            return empty_prompt(self._config, recorder)
        text = compose_prompt(self._config.system_prompt, prompt)
        launch = Launch(
            self._argv(text),
            working_directory(self._config, self._backend),
            # A host the command starts counts as one level beneath this run.
            {
                **self._backend.environment(),
                **recorder.place(self._config.delegation).environment(),
            },
            text,
        )
        budget = OutputBudget(self._backend.max_output_bytes)
        try:
            if self._backend.terminal:
                code = await self._terminal_runner().run(launch, recorder, budget)
                detail = None  # the merged output, the only account a terminal gives
            else:
                code, detail = await self._run_piped(launch, recorder, budget)
        except SpawnError as error:
            message = could_not_start(repr(self._backend.command), str(error))
            return failed(recorder, self._redactor, "spawn", message)
        if budget.exceeded:
            return over_limit(recorder, self._redactor, self._backend.command, budget)
        if code == 0:
            return replied(recorder)
        detail = tail(recorder.output if detail is None else detail)
        message = f"{self._backend.command} {describe_exit(code)}" + (
            f": {detail}" if detail else ""
        )
        return failed(recorder, self._redactor, "process", message)

    def _terminal_runner(self) -> TerminalRunner:
        if self._terminal is None:
            from oma_host.bridges.pty import TerminalRunner

            self._terminal = TerminalRunner(self._backend.input)
        return self._terminal

    async def _run_piped(
        self, launch: Launch, recorder: RunRecorder, budget: OutputBudget
    ) -> tuple[int, str]:
        """Run with pipes; the exit code and the end of stderr."""
        piped = self._backend.input == "stdin"
        stdin = asyncio.subprocess.PIPE if piped else asyncio.subprocess.DEVNULL
        process = await spawn_group(launch.argv, cwd=launch.cwd, env=launch.env, stdin=stdin)
        self._running.add(process)
        try:
            return await _collect(process, launch.text, recorder, budget)
        finally:
            self._running.discard(process)
            await end_process_group(process)

    async def close(self) -> None:
        """Kill every process tree this bridge still has running."""
        await asyncio.gather(
            *(end_process_group(process) for process in list(self._running)),
            *([self._terminal.close()] if self._terminal is not None else []),
        )


async def _collect(
    process: GroupProcess, text: str, recorder: RunRecorder, budget: OutputBudget
) -> tuple[int, str]:
    assert process.stdout is not None and process.stderr is not None
    stderr = StderrTail(process.stderr)
    stdout = asyncio.ensure_future(_read_text(process.stdout, recorder.text, budget))
    readers = [asyncio.ensure_future(_feed(process, text)), stdout, stderr.task]
    exited = asyncio.ensure_future(wait_for_exit(process))
    try:
        await asyncio.wait({exited, stdout}, return_when=asyncio.FIRST_COMPLETED)
        if budget.exceeded:
            await end_process_group(process)
        code = await exited
        # Descendants may still hold the pipes; give them a moment, then end the group.
        _, pending = await asyncio.wait(readers, timeout=ORPHAN_GRACE_S)
        if pending:
            await end_process_group(process)
            await asyncio.wait(pending, timeout=TERM_GRACE_S)
    finally:
        for task in [exited, *readers]:
            task.cancel()
    return code, stderr.text()


async def _feed(process: GroupProcess, text: str) -> None:
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


async def _read_text(
    stream: asyncio.StreamReader, sink: Callable[[str], object], budget: OutputBudget
) -> None:
    """Decode a pipe as UTF-8 (bad bytes replaced) and hand each piece to
    ``sink``, until end of file or the budget is spent."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while chunk := await stream.read(_READ_SIZE):
        if text := decoder.decode(budget.take(chunk)):
            sink(text)
        if budget.exceeded:
            return  # a character cut in two at the limit is left out
    if rest := decoder.decode(b"", final=True):
        sink(rest)
