"""Where a run's file text comes from and where its edits go: the editor, else the disk.

The one place that reads the door's editor channel for files: :func:`carry_out`
makes an :class:`oma_host.workspace.edits.Edit` through the editor's own write
(ACP ``fs/write_text_file``), else a workspace edit (``workspace/applyEdit``),
else atomically on disk, so an editor shows the change in its undo stack. What
the editor fails to do raises :class:`EditorFailed`. docs/tools.md, "Edits".
"""

from __future__ import annotations

import asyncio
from typing import Any

from oma_host.core.editor_channel import EditorChannel, FileReader
from oma_host.workspace.confined import Root, ToolError
from oma_host.workspace.edits import Edit, workspace_edit, write_file


class EditorFailed(ToolError):
    """The editor did not read or make what it was asked to; the message says why."""


async def editor_text(read: FileReader, path: str, timeout_s: float) -> str:
    """The editor's text of the file at the absolute ``path``."""
    try:
        return await asyncio.wait_for(read(path), timeout_s)
    except TimeoutError:
        raise EditorFailed(f"the editor did not send {path} within {timeout_s:g} s") from None
    except Exception as error:  # the editor answered an error
        raise EditorFailed(f"the editor could not read {path}: {error}") from None


def _write_at(edit: Edit, root_path: str) -> None:
    with Root(root_path) as root:
        write_file(edit, root)


async def carry_out(edit: Edit, root_path: str, editor: EditorChannel, timeout_s: float) -> str:
    """Make ``edit`` (planned beneath ``root_path``) where the channel says
    (see the module docstring); the summary the model reads."""
    if editor.write_text is not None:
        path = edit.absolute(root_path)
        try:
            await asyncio.wait_for(editor.write_text(path, edit.text), timeout_s)
        except TimeoutError:
            raise EditorFailed(f"the editor did not write {path} within {timeout_s:g} s") from None
        except Exception as error:  # the editor answered an error
            raise EditorFailed(f"the editor could not write {path}: {error}") from None
        return f"{edit.summary()} (written by the editor)"
    if editor.apply_edit is not None:
        params = workspace_edit(edit, root_path)
        try:
            answer = await asyncio.wait_for(editor.apply_edit(params), timeout_s)
        except TimeoutError:
            limit = f"{timeout_s:g} s"
            raise EditorFailed(f"the editor did not apply the edit within {limit}") from None
        except Exception as error:  # the client answered an error
            raise EditorFailed(f"the editor could not apply the edit: {error}") from None
        if not _applied(answer):
            reason = answer.get("failureReason") if isinstance(answer, dict) else None
            because = f": {reason}" if isinstance(reason, str) and reason else ""
            raise EditorFailed(f"the editor refused the edit{because}")
        return f"{edit.summary()} (applied in the editor)"
    await asyncio.to_thread(_write_at, edit, root_path)
    return edit.summary()


def _applied(answer: Any) -> bool:
    """Whether an ``ApplyWorkspaceEditResult`` says the edit was applied."""
    return isinstance(answer, dict) and answer.get("applied") is True
