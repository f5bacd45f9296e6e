"""The files an external ACP agent reads and writes through oma-host, its client.

Reads always, writes only with ``backend.allowWrites: true``. Paths are
confined to the agent's ``cwd`` by the tools' own code
(:mod:`oma_host.workspace.confined`); a read goes to the editor when the door's
channel reads files, else to the disk. A write is planned as ``file_write``
plans it, put to the agent's permission policy, and carried out where
``file_write``'s would be. A refusal is a JSON-RPC error saying why.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from typing import cast

from acp import RequestError

from oma_host.core.editor_channel import EditorChannel
from oma_host.core.events import ToolPermission
from oma_host.core.tools import FILE_WRITE
from oma_host.workspace.confined import Root, ToolError, open_beneath, read_at_most
from oma_host.workspace.editor_files import EditorFailed, carry_out, editor_text
from oma_host.workspace.edits import Edit, plan_write
from oma_host.workspace.permissions import PermissionPolicy, confirm_approved

MAX_READ_BYTES = 4 * 1024 * 1024  # what one fs/read_text_file answers at most
_EDITOR_TIMEOUT_S = 30.0


def select_lines(text: str, line: int | None, limit: int | None) -> str:
    """The ``limit`` lines from 1-based ``line`` on, as ACP reads them."""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + max(limit, 0)
    return "".join(lines[start:end])


def _read_disk(root_path: str, path: str) -> tuple[str, str]:
    """(absolute path, text) of the regular file ``path`` beneath the root."""
    with Root(root_path) as root:
        fd, relative = open_beneath(root, path, "path")
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ToolError(f"{relative or '.'} is not a file")
            data = read_at_most(fd, MAX_READ_BYTES + 1)
        finally:
            os.close(fd)
    if len(data) > MAX_READ_BYTES:
        raise ToolError(f"{path} is over {MAX_READ_BYTES} bytes")
    return os.path.join(root_path, relative), data.decode(errors="replace")


def _plan(root_path: str, path: str, content: str) -> Edit:
    with Root(root_path) as root:
        return plan_write(path, content, root)


class AgentFiles:
    """The ``fs/*`` methods one agent process is served; see the module docstring."""

    def __init__(
        self,
        cwd: str,
        *,
        allow_writes: bool,
        policy: PermissionPolicy,
        editor: EditorChannel,
    ) -> None:
        self.root = os.path.realpath(cwd)
        self.allow_writes = allow_writes
        self._policy = policy
        self._editor = editor
        self.events: Callable[[ToolPermission], None] | None = None  # the turn's permission events

    async def read(self, path: str, line: int | None, limit: int | None) -> str:
        try:
            absolute, text = await asyncio.to_thread(_read_disk, self.root, path)
            if self._editor.read_text is not None:
                text = await editor_text(self._editor.read_text, absolute, _EDITOR_TIMEOUT_S)
        except EditorFailed as error:  # the editor could not: say so, as it said it
            raise RequestError.internal_error({"path": path, "reason": str(error)}) from None
        except ToolError as error:
            raise RequestError.invalid_params({"path": path, "reason": str(error)}) from None
        return select_lines(text, line, limit)

    async def write(self, path: str, content: str, call_id: str) -> None:
        if not self.allow_writes:
            raise RequestError.method_not_found("fs/write_text_file")
        arguments = {"path": path, "content": content}
        # A write that cannot happen (outside cwd, not a file, read-only, too
        # big) is refused before anyone is asked; it is planned again once
        # allowed, as the file may have changed while the client was asked.
        await self._plan(path, content)
        decision = await self._policy.decide(FILE_WRITE, arguments, run_id="", tool_use_id=call_id)
        if self.events is not None:
            # The policy builds its decision as a plain dict, in the event's shape.
            self.events(cast(ToolPermission, decision.event))
        if not decision.allowed:
            reason = f"writing {path} was not permitted ({decision.event.get('by', 'policy')})"
            raise RequestError.internal_error({"path": path, "reason": reason})
        edit = await self._plan(path, content)
        try:
            confirm_approved(path, edit.resolved(), decision.resolved)
            await carry_out(edit, self.root, self._editor, _EDITOR_TIMEOUT_S)
        except EditorFailed as error:  # refused, timed out, or the client is gone
            raise RequestError.internal_error({"path": path, "reason": str(error)}) from None
        except (ToolError, OSError) as error:
            raise _invalid(path, error) from None

    async def _plan(self, path: str, content: str) -> Edit:
        try:
            return await asyncio.to_thread(_plan, self.root, path, content)
        except (ToolError, OSError) as error:
            raise _invalid(path, error) from None


def _invalid(path: str, error: ToolError | OSError) -> RequestError:
    reason = str(error) if isinstance(error, ToolError) else error.strerror or str(error)
    return RequestError.invalid_params({"path": path, "reason": reason})
