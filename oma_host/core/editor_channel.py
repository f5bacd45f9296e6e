"""What a door's client can do with the files a run's tools touch (:class:`EditorChannel`).

Each part is optional and each door fills in what its client offers: the ACP
editor's file reads and writes and terminals (:class:`EditorTerminal`), the
JSON-RPC client's ``workspace/applyEdit``. Without a channel, tools read and
write the disk. Tools confine every path before handing it over;
:mod:`oma_host.workspace.editor_files` decides which part a write uses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# Reads the text of a file given its absolute path; raises when it cannot.
FileReader = Callable[[str], Awaitable[str]]
# Writes the whole new text of a file given its absolute path; raises when it cannot.
FileWriter = Callable[[str, str], Awaitable[None]]
# Sends ``workspace/applyEdit`` params; returns the client's answer ``{applied, failureReason?}``.
EditApplier = Callable[[dict[str, Any]], Awaitable[Any]]
# Asks the user to fill in a form: its message and JSON schema (primitive
# properties); returns ``{action: "accept" | "decline" | "cancel", content?}``.
Elicitor = Callable[[str, dict[str, Any]], Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class TerminalExit:
    """How a command in the editor's terminal ended: its exit code, or the
    signal that ended it (either may be unknown)."""

    exit_code: int | None
    signal: str | None


@dataclass(frozen=True)
class TerminalOutput:
    """A terminal's output so far: its text (the editor keeps the last
    ``output_byte_limit`` bytes), whether earlier output was dropped, and
    its exit once the command has exited."""

    text: str
    truncated: bool
    exit: TerminalExit | None


class EditorTerminal(Protocol):
    """Commands run in the editor's terminals (ACP ``terminal/*``), which
    the user watches; each method raises when the editor fails it."""

    async def create(
        self,
        command: str,
        args: list[str],
        cwd: str,
        env: dict[str, str],
        output_byte_limit: int,
    ) -> str:
        """Start ``command`` with ``args`` in a new terminal; its id."""
        ...

    async def wait_for_exit(self, terminal_id: str) -> TerminalExit: ...

    async def output(self, terminal_id: str) -> TerminalOutput: ...

    async def kill(self, terminal_id: str) -> None:
        """End the command; the terminal stays until released."""
        ...

    async def release(self, terminal_id: str) -> None:
        """Free the terminal (a running command is ended); an editor keeps
        showing a terminal a tool call embeds."""
        ...


@dataclass(frozen=True)
class EditorChannel:
    """What a door's client serves; see the module docstring."""

    read_text: FileReader | None = None
    write_text: FileWriter | None = None
    apply_edit: EditApplier | None = None
    terminal: EditorTerminal | None = None
    elicit: Elicitor | None = None


NO_EDITOR = EditorChannel()
