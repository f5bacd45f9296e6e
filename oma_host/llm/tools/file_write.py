"""``file_write {path, content}``: create a file under ``cwd``, or replace its text."""

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
    edit = await workspace.in_thread(
        lambda root: plan_write(params.path, params.content, root), params.path
    )
    workspace.confirm(params.path, edit.resolved())
    root = workspace.root_for(params.path)
    return await carry_out(edit, root, workspace.editor, workspace.editor_timeout_s)


TOOL = declare(FILE_WRITE, FileWriteParams, _run)
