"""``file_read {path}``: a regular file's text in the agent's folders, up to 256 KiB.

Only a regular file is read, so a FIFO cannot block the call; when the editor
reads files, its text of the confined path is read instead, so an unsaved
buffer wins over the disk.
"""

from __future__ import annotations

import os
import stat

from pydantic import Field

from oma_host.core.tools import FILE_READ
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Root, Stop, ToolError, open_beneath, read_at_most
from oma_host.workspace.editor_files import editor_text

MAX_READ_BYTES = 256 * 1024


class FileReadParams(ToolParams):
    path: NonEmpty = Field(description="relative path")


def _open(path: str, root: Root) -> tuple[int, str]:
    """The regular file at ``path``, opened beneath the root; and its path."""
    fd, where = open_beneath(root, path, "path")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{where or '.'} is not a file")
    return fd, where


def _text(data: bytes) -> str:
    text = data[:MAX_READ_BYTES].decode(errors="replace")
    if len(data) > MAX_READ_BYTES:
        text += f"\n[truncated at {MAX_READ_BYTES} bytes]"
    return text


def _read_disk(path: str, root: Root, workspace: Workspace) -> str:
    fd, where = _open(path, root)
    try:
        workspace.confirm(path, where)
        return _text(read_at_most(fd, MAX_READ_BYTES + 1))
    finally:
        os.close(fd)


def _confined(path: str, root: Root, workspace: Workspace) -> str:
    """The absolute path of the file ``path`` names, confined as on disk."""
    fd, where = _open(path, root)
    os.close(fd)
    workspace.confirm(path, where)
    return os.path.join(root.path, where)


async def _run(params: FileReadParams, workspace: Workspace, stop: Stop) -> str:
    read = workspace.editor.read_text
    if read is None:
        return await workspace.in_thread(
            lambda root: _read_disk(params.path, root, workspace), params.path
        )
    path = await workspace.in_thread(
        lambda root: _confined(params.path, root, workspace), params.path
    )
    text = await editor_text(read, path, workspace.editor_timeout_s)
    return _text(text.encode(errors="replace"))


TOOL = declare(FILE_READ, FileReadParams, _run)
