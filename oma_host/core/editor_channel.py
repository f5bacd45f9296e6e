"""What a door's client can do with the files a run's tools touch: the
:class:`EditorChannel` a door hands each agent with its other client
callbacks (:class:`oma_host.core.agent.AgentCallbacks`).

Each part is optional, and each door fills in what its client said it can
do: the ACP door's editor may read a file's text (``fs/read_text_file``, so
an unsaved buffer wins over the disk) and write a file's whole text
(``fs/write_text_file``); the JSON-RPC door's client may apply a workspace
edit (LSP's ``workspace/applyEdit``). A run without a channel, or with an
empty one, reads and writes the disk. The tools still confine every path to
the agent's ``cwd`` themselves and hand the channel only absolute paths that
resolve beneath it; which part a write uses is decided in one place
(:mod:`oma_host.llm.editor_files`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

# Reads the text of a file given its absolute path; raises when it cannot.
FileReader = Callable[[str], Awaitable[str]]
# Writes the whole new text of a file given its absolute path; raises when it cannot.
FileWriter = Callable[[str, str], Awaitable[None]]
# Sends ``workspace/applyEdit`` params; returns the client's answer ``{applied, failureReason?}``.
EditApplier = Callable[[dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class EditorChannel:
    """The file operations a door's client serves; see the module docstring."""

    read_text: FileReader | None = None
    write_text: FileWriter | None = None
    apply_edit: EditApplier | None = None


NO_EDITOR = EditorChannel()
