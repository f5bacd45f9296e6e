"""The rules every external bridge follows, written once for the process and ACP bridges.

The prompt they send, where their command runs, how a failure reads (redacted,
the end of stderr kept), the result of a text reply, and the output budget.
docs/protocol.md, "External backends".
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from oma_host.core.config import AcpBackend, AgentConfig, ProcessBackend
from oma_host.core.errors import ErrorKind
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult

STDERR_LIMIT = 16384  # the tail of stderr kept for a failure message
_READ_SIZE = 65536


def compose_prompt(system_prompt: str | None, text: str) -> str:
    """The role prompt and the user's text, joined by a blank line."""
    if system_prompt:
        return f"{system_prompt}\n\n{text}"
    return text


def working_directory(config: AgentConfig, backend: ProcessBackend | AcpBackend) -> str | None:
    """Where the command runs: ``backend.cwd``, else the agent's ``cwd``
    (None: the host's own)."""
    return backend.cwd or config.cwd


@dataclass(frozen=True)
class Launch:
    """One run of a command: its argv, where and with what environment it
    runs, and the prompt text it is sent (on stdin, when that is its input)."""

    argv: list[str]
    cwd: str | None
    env: dict[str, str]
    text: str


def could_not_start(who: str, reason: str) -> str:
    return f"could not start {who}: {reason}"


def failed(
    recorder: RunRecorder, redactor: Redactor, kind: ErrorKind, message: str
) -> AgentRunResult:
    """The failed run, its message (redacted) both status and output."""
    message = redactor.redact(message)
    return recorder.result("error", message, output=message, error_kind=kind)


def empty_prompt(config: AgentConfig, recorder: RunRecorder) -> AgentRunResult:
    """The failed run of a prompt with nothing in it to send."""
    message = f"agent {config.name!r}: the prompt is empty; nothing to send"
    return recorder.result("error", message, output=message, error_kind="input")


def replied(recorder: RunRecorder) -> AgentRunResult:
    """The successful run: the text received is the output and the one
    assistant message."""
    recorder.messages.append(
        {"role": "assistant", "content": [{"type": "text", "text": recorder.output}]}
    )
    return recorder.result()


class OutputBudget:
    """How many bytes of output a command may still write. The bytes past
    the limit are dropped and ``exceeded`` set: the run then ends the command
    and fails (:func:`over_limit`), keeping what came before."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.exceeded = False
        self._room = limit

    def take(self, chunk: bytes) -> bytes:
        """The part of ``chunk`` that fits."""
        if len(chunk) > self._room:
            self.exceeded = True
            chunk = chunk[: self._room]
        self._room -= len(chunk)
        return chunk


def over_limit(
    recorder: RunRecorder, redactor: Redactor, command: str, budget: OutputBudget
) -> AgentRunResult:
    """The failed run of a command that wrote more than its budget; the
    output is the first ``budget.limit`` bytes."""
    message = redactor.redact(
        f"{command} wrote more than {budget.limit} bytes of output (backend.maxOutputBytes); "
        f"it was ended, and the output holds the first {budget.limit} bytes"
    )
    return recorder.result("error", message, error_kind="output_limit")


def tail(text: str) -> str:
    """The end of a command's diagnostics, as a failure message quotes it."""
    return text[-STDERR_LIMIT:].strip()


class StderrTail:
    """Drains a command's stderr (a full pipe would block it) and keeps the end."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._data = bytearray()
        self.task = asyncio.ensure_future(self._read(stream))

    async def _read(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(_READ_SIZE):
            self._data += chunk
            del self._data[:-STDERR_LIMIT]

    async def settle(self) -> None:
        """Give the last words of an exiting command a moment to arrive."""
        await asyncio.wait({self.task}, timeout=0.5)

    def text(self) -> str:
        return tail(self._data.decode(errors="replace"))

    def cancel(self) -> None:
        self.task.cancel()
