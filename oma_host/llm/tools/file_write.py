"""``file_write {path, content}``: create a file under the agent's ``cwd``,
or replace all of its text.

Planned beneath ``cwd`` with the read tools' confinement (missing folders of
a new file are made beneath it; :func:`oma_host.workspace.edits.plan_write`), then
carried out where the door's editor channel says
(:func:`oma_host.workspace.editor_files.carry_out`): the editor's own write, the
JSON-RPC client's ``workspace/applyEdit``, or an atomic write to disk.
"""

from __future__ import annotations

from pydantic import Field

from oma_host.core.tools import FILE_WRITE
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Stop
from oma_host.workspace.editor_files import carry_out
from oma_host.workspace.edits import plan_write


class FileWriteParams(ToolParams):
    path: NonEmpty = Field(description="relative path")
    content: str = Field(description="the whole new text")


async def _run(params: FileWriteParams, workspace: Workspace, stop: Stop) -> str:
    edit = await workspace.in_thread(lambda root: plan_write(params.path, params.content, root))
    workspace.confirm(params.path, edit.resolved())
    return await carry_out(edit, workspace.root, workspace.editor, workspace.editor_timeout_s)


TOOL = declare(FILE_WRITE, FileWriteParams, _run)
