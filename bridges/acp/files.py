"""The files an external ACP agent reads and writes through oma-host, its
client: ``fs/read_text_file`` always, ``fs/write_text_file`` only with
``backend.allowWrites: true``.

Every path is confined to the agent's ``cwd`` by the LLM tools' own code
(:mod:`oma_host.llm.confined`): resolved one component at a time beneath a
descriptor of the root, so ``..``, an absolute path elsewhere or a symlink
leading out is refused, however names change meanwhile. A confined read goes
to the run's editor when a door set a reader (:mod:`oma_host.core.file_view`:
the ACP door's client, whose unsaved buffers win), else to the disk. The
JSON-RPC door has no method to read the editor's buffers (its contract has no
``fs/read``), so its runs read the disk.

A write is first put to the agent's permission policy (``config.permissions``
rules for the tool name ``file_write``, by default asking the client,
:mod:`oma_host.llm.permissions`); allowed, it goes to the run's editor writer
(the ACP door), else as a ``workspace/applyEdit`` when the JSON-RPC client
applies edits, else atomically to the disk (:mod:`oma_host.llm.edits`, the
same planning and writing as ``file_write``).

A refused or failed call answers the agent with a JSON-RPC error whose
message says why (``-32602`` for a path outside ``cwd`` or not a file,
``-32603`` for a refused or failed write).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable
from typing import Any, cast

from acp import RequestError

from oma_host.core.events import ToolPermission
from oma_host.core.file_view import FileReader, FileWriter
from oma_host.llm.confined import Root, ToolError, open_beneath, read_at_most
from oma_host.llm.edits import plan_write, workspace_edit, write_file
from oma_host.llm.permissions import PermissionPolicy

MAX_READ_BYTES = 4 * 1024 * 1024  # what one fs/read_text_file answers at most
_EDIT_TIMEOUT_S = 30.0
# Sends a workspace/applyEdit to the JSON-RPC client; answers {applied: bool}.
EditApplier = Callable[[dict[str, Any]], Awaitable[Any]]


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


class AgentFiles:
    """The ``fs/*`` methods one agent process is served; see the module docstring."""

    def __init__(
        self,
        cwd: str,
        *,
        allow_writes: bool,
        policy: PermissionPolicy,
        apply_edit: EditApplier | None,
    ) -> None:
        self.root = os.path.realpath(cwd)
        self.allow_writes = allow_writes
        self._policy = policy
        self._apply_edit = apply_edit
        # The editor's view for the turn in flight (set at each prompt, from its run).
        self.reader: FileReader | None = None
        self.writer: FileWriter | None = None
        self.events: Callable[[ToolPermission], None] | None = None  # the turn's permission events

    async def read(self, path: str, line: int | None, limit: int | None) -> str:
        try:
            absolute, text = await asyncio.to_thread(_read_disk, self.root, path)
        except ToolError as error:
            raise RequestError.invalid_params({"path": path, "reason": str(error)}) from None
        reader = self.reader
        if reader is not None:
            try:
                text = await reader(absolute)
            except Exception as error:  # the editor could not: say so, as it said it
                raise RequestError.internal_error({"path": path, "reason": str(error)}) from None
        return select_lines(text, line, limit)

    async def write(self, path: str, content: str, call_id: str) -> None:
        if not self.allow_writes:
            raise RequestError.method_not_found("fs/write_text_file")
        arguments = {"path": path, "content": content}
        decision = await self._policy.decide(
            "file_write", arguments, is_mcp=False, run_id="", tool_use_id=call_id
        )
        if self.events is not None:
            # The policy builds its decision as a plain dict, in the event's shape.
            self.events(cast(ToolPermission, decision.event))
        if not decision.allowed:
            reason = f"writing {path} was not permitted ({decision.event.get('by', 'policy')})"
            raise RequestError.internal_error({"path": path, "reason": reason})
        try:
            with Root(self.root) as root:
                edit = await asyncio.to_thread(plan_write, arguments, root)
                if self.writer is not None:
                    await self.writer(edit.absolute(self.root), content)
                elif self._apply_edit is not None:
                    await self._through_client(workspace_edit(edit, self.root), path)
                else:
                    await asyncio.to_thread(write_file, edit, root)
        except (ToolError, OSError) as error:
            reason = str(error) if isinstance(error, ToolError) else error.strerror or str(error)
            raise RequestError.invalid_params({"path": path, "reason": reason}) from None

    async def _through_client(self, params: dict[str, Any], path: str) -> None:
        assert self._apply_edit is not None
        try:
            answer = await asyncio.wait_for(self._apply_edit(params), _EDIT_TIMEOUT_S)
        except Exception as error:  # refused, timed out, or the client is gone
            reason = f"the editor could not apply the edit: {error or type(error).__name__}"
            raise RequestError.internal_error({"path": path, "reason": reason}) from None
        if not isinstance(answer, dict) or answer.get("applied") is not True:
            reason = "the editor did not apply the edit"
            raise RequestError.internal_error({"path": path, "reason": reason})
