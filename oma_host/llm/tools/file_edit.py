"""``file_edit {path, old, new}``: replace the one exact occurrence of ``old`` in a file.

The path is confined beneath ``cwd`` (or an additional directory); ``old``
is looked for in the editor's text when the editor reads files (the unsaved
buffer the model read), and the edit is carried out where the editor channel
says.
"""

from __future__ import annotations

from pydantic import Field

from oma_host.core.tools import FILE_EDIT
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Stop
from oma_host.workspace.editor_files import carry_out, editor_text
from oma_host.workspace.edits import existing_file, plan_edit, replace_once


class FileEditParams(ToolParams):
    path: NonEmpty = Field(description="relative path")
    old: NonEmpty = Field(description="the exact text to replace")
    new: str = Field(description="the text to put in its place")


async def _run(params: FileEditParams, workspace: Workspace, stop: Stop) -> str:
    read, timeout_s = workspace.editor.read_text, workspace.editor_timeout_s
    folder = workspace.root_for(params.path)
    if read is None:
        edit = await workspace.in_thread(
            lambda root: plan_edit(params.path, params.old, params.new, root), params.path
        )
    else:
        located = await workspace.in_thread(
            lambda root: existing_file(params.path, root), params.path
        )
        current = await editor_text(read, located.absolute(folder), timeout_s)
        edit = replace_once(located, current, params.old, params.new)
    workspace.confirm(params.path, edit.resolved())
    return await carry_out(edit, folder, workspace.editor, timeout_s)


TOOL = declare(FILE_EDIT, FileEditParams, _run)
