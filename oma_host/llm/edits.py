"""The write tools, ``file_write {path, content}`` and ``file_edit {path, old,
new}``: what they change, planned beneath the agent's ``cwd`` with the read
tools' confinement (:mod:`oma_host.llm.confined`), then carried out one of
two ways.

An :class:`Edit` is planned first: the file read (if it exists) through
descriptors opened beneath the root, the new text worked out, and the LSP
edit that makes it (a range in UTF-16 code units, as LSP counts). Where the
client applies edits (``workspace/applyEdit``), :func:`workspace_edit` is what
it is sent and the host writes nothing; otherwise :func:`write_file` writes
the whole new text atomically: a temporary file in the same directory, its
mode set to the old file's, synced, then renamed over the name (the rename
replaces a name in a directory held open beneath the root, so it cannot land
outside). Missing directories of a new file are made one by one the same way.

``file_edit`` replaces exactly one occurrence of ``old``; none, or more than
one, is an error result that tells the model what to do instead.

Behind the ACP door (:func:`edit_in_editor_view`), an editor that serves
``fs/read_text_file`` has the edit planned against its text of the file (the
text the model read), and one that serves ``fs/write_text_file`` is sent the
whole new text to apply; the host then writes nothing. An editor that reads
but cannot write has the new text written to disk as above.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oma_host.core.file_view import FileReader, FileWriter
from oma_host.llm.confined import Root, ToolError, open_beneath, read_at_most

MAX_EDIT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Edit:
    """One planned change of one file."""

    path: str  # as the model gave it, for messages
    directory: str  # the existing directory it goes in, relative to the root ("" for the root)
    missing: tuple[str, ...]  # directories to make below ``directory``
    name: str
    existing: str | None  # the file's text now; None for a new file
    mode: int | None  # the existing file's permission bits
    text: str  # the whole new text
    start: tuple[int, int]  # the LSP range replaced (line, UTF-16 character)
    end: tuple[int, int]
    replacement: str

    def absolute(self, root: str) -> str:
        return os.path.join(root, self.directory, *self.missing, self.name)

    def summary(self) -> str:
        if self.existing is None:
            return f"created {self.path} ({len(self.text)} characters)"
        if self.start == (0, 0) and self.replacement == self.text:
            return f"wrote {self.path} ({len(self.text)} characters)"
        return f"edited {self.path}: replaced lines {self.start[0] + 1}-{self.end[0] + 1}"


def _position(text: str, offset: int) -> tuple[int, int]:
    """LSP's (line, character) of ``text[offset]``: characters in UTF-16 units."""
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return line, len(text[line_start:offset].encode("utf-16-le")) // 2


def _read_text(fd: int, path: str) -> tuple[str, int]:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{path} is not a file")
    if info.st_size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{path} is over {MAX_EDIT_BYTES} bytes; the write tools take smaller files"
        )
    data = read_at_most(fd, MAX_EDIT_BYTES + 1)
    try:
        return data.decode("utf-8"), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError:
        raise ToolError(f"{path} is not UTF-8 text; it cannot be edited") from None


def _locate(root: Root, path: str) -> tuple[str, tuple[str, ...], str, str | None, int | None]:
    """Where ``path`` is: (directory, missing directories, name, text, mode)."""
    try:
        fd, resolved = open_beneath(root, path, "path")
    except ToolError as error:
        if error.code != errno.ENOENT:
            raise
    else:
        try:
            text, mode = _read_text(fd, path)
        finally:
            os.close(fd)
        directory, _, name = resolved.rpartition("/")
        return directory, (), name, text, mode
    # A new file: the deepest existing directory, then the names to make.
    if path.startswith("/"):
        normal = os.path.normpath(path)
        if not normal.startswith(root.path.rstrip("/") + "/"):
            raise ToolError(f"path {path!r} is outside the agent's working directory")
        path = normal[len(root.path.rstrip("/")) + 1 :]
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if not parts or parts[-1] == "..":
        raise ToolError(f"path {path!r} names no file")
    for depth in range(len(parts) - 1, -1, -1):
        try:
            fd, directory = open_beneath(root, "/".join(parts[:depth]) or ".", "path")
        except ToolError as error:
            if error.code == errno.ENOENT and depth > 0:
                continue
            raise
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                raise ToolError(f"path {path!r}: {os.strerror(errno.ENOTDIR)}")
        finally:
            os.close(fd)
        missing = tuple(parts[depth:-1])
        if ".." in missing:
            raise ToolError(f"path {path!r} goes through a directory that does not exist")
        return directory, missing, parts[-1], None, None
    raise ToolError(f"path {path!r} names no file")  # unreachable: depth 0 is the root


def _string(arguments: dict[str, Any], field: str, *, empty: bool) -> str:
    value = arguments.get(field)
    if not isinstance(value, str) or (not empty and not value):
        raise ToolError(f"{field} must be a {'' if empty else 'non-empty '}string")
    return value


def plan_write(arguments: dict[str, Any], root: Root) -> Edit:
    """``file_write``: the file's whole text becomes ``content``."""
    path = _string(arguments, "path", empty=False)
    content = _string(arguments, "content", empty=True)
    directory, missing, name, existing, mode = _locate(root, path)
    end = (0, 0) if existing is None else _position(existing, len(existing))
    return Edit(path, directory, missing, name, existing, mode, content, (0, 0), end, content)


def plan_edit(arguments: dict[str, Any], root: Root) -> Edit:
    """``file_edit``: the one occurrence of ``old`` becomes ``new``."""
    path = _string(arguments, "path", empty=False)
    old = _string(arguments, "old", empty=False)
    new = _string(arguments, "new", empty=True)
    directory, missing, name, existing, mode = _locate(root, path)
    if existing is None:
        raise ToolError(f"{path} does not exist; use file_write to create it")
    text, start, end = _replace_once(path, existing, old, new)
    return Edit(path, directory, missing, name, existing, mode, text, start, end, new)


def _replace_once(
    path: str, existing: str, old: str, new: str
) -> tuple[str, tuple[int, int], tuple[int, int]]:
    """``existing`` with its one ``old`` made ``new``, and the range replaced."""
    count = existing.count(old)
    if count == 0:
        raise ToolError(
            f"old does not occur in {path}; read the file again and copy the text to "
            "replace exactly, whitespace included"
        )
    if count > 1:
        raise ToolError(
            f"old occurs {count} times in {path}; include more of the surrounding text "
            "so that it occurs once"
        )
    at = existing.index(old)
    text = existing[:at] + new + existing[at + len(old) :]
    return text, _position(existing, at), _position(existing, at + len(old))


def rebase(edit: Edit, tool: str, arguments: dict[str, Any], current: str) -> Edit:
    """``edit`` planned again against ``current``, the file's text as the
    editor has it (an unsaved buffer), rather than the disk's: the model read
    that text (``file_read`` through the editor), so ``old`` is looked for
    there. ToolError when ``old`` is not in it exactly once."""
    if tool == "file_write":
        end = _position(current, len(current))
        return replace(edit, existing=current, end=end)
    text, start, end = _replace_once(edit.path, current, arguments["old"], arguments["new"])
    return replace(edit, existing=current, text=text, start=start, end=end)


def workspace_edit(edit: Edit, root: str) -> dict[str, Any]:
    """The ``workspace/applyEdit`` params that make ``edit`` (LSP's
    ``documentChanges``: a CreateFile for a new file, then one TextEdit)."""
    uri = Path(edit.absolute(root)).as_uri()
    changes: list[dict[str, Any]] = []
    if edit.existing is None:
        changes.append({"kind": "create", "uri": uri, "options": {"ignoreIfExists": True}})
    line, character = edit.start
    end_line, end_character = edit.end
    changes.append(
        {
            "textDocument": {"uri": uri, "version": None},
            "edits": [
                {
                    "range": {
                        "start": {"line": line, "character": character},
                        "end": {"line": end_line, "character": end_character},
                    },
                    "newText": edit.replacement,
                }
            ],
        }
    )
    return {"label": f"oma-host: {edit.summary()}", "edit": {"documentChanges": changes}}


_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def write_file(edit: Edit, root: Root) -> None:
    """Write ``edit.text`` atomically beneath the root (see the module doc)."""
    fd, _ = open_beneath(root, edit.directory or ".", "path")
    try:
        for name in edit.missing:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            inner = os.open(name, _OPEN_DIR, dir_fd=fd)  # never through a symlink
            os.close(fd)
            fd = inner
        temporary = f".{edit.name}.{uuid.uuid4().hex[:12]}.tmp"
        # A new file gets 0o666 less the umask, as any editor's would.
        out = os.open(
            temporary,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o666 if edit.mode is None else 0o600,
            dir_fd=fd,
        )
        try:
            try:
                if edit.mode is not None:
                    os.fchmod(out, edit.mode)
                data = edit.text.encode("utf-8")
                view = memoryview(data)
                while view:
                    view = view[os.write(out, view) :]
                os.fsync(out)
            finally:
                os.close(out)
            os.rename(temporary, edit.name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=fd)
            raise
    finally:
        os.close(fd)


_PLANS = {"file_write": plan_write, "file_edit": plan_edit}


def _plan_at(tool: str, arguments: dict[str, Any], root_path: str) -> Edit:
    with Root(root_path) as root:
        return _PLANS[tool](arguments, root)


def _locate_at(tool: str, arguments: dict[str, Any], root_path: str) -> Edit:
    """For planning against the editor's text: the arguments checked and the
    file located and confined as ``tool`` would, the change not yet worked
    out for ``file_edit`` (:func:`rebase` does that)."""
    with Root(root_path) as root:
        if tool != "file_edit":
            return plan_write(arguments, root)
        path = _string(arguments, "path", empty=False)
        _string(arguments, "old", empty=False)
        _string(arguments, "new", empty=True)
        edit = plan_write({"path": path, "content": ""}, root)
        if edit.existing is None:
            raise ToolError(f"{path} does not exist; use file_write to create it")
        return edit


def _write_at(edit: Edit, root_path: str) -> None:
    with Root(root_path) as root:
        write_file(edit, root)


async def edit_in_editor_view(
    tool: str,
    arguments: dict[str, Any],
    root_path: str,
    reader: FileReader | None,
    writer: FileWriter | None,
    timeout_s: float,
) -> tuple[str, bool]:
    """``file_write`` / ``file_edit`` in the editor's view (see the module
    doc): (output, is_error), every failure an error result. The path is
    confined beneath ``root_path`` on disk before the editor is asked."""
    try:
        # file_write needs no old text: the editor and the disk take the whole new one.
        from_editor = reader is not None and tool == "file_edit"
        plan = _locate_at if from_editor else _plan_at
        edit = await asyncio.to_thread(plan, tool, arguments, root_path)
        path = edit.absolute(root_path)
        if reader is not None and from_editor:
            try:
                current = await asyncio.wait_for(reader(path), timeout_s)
            except Exception as error:
                raise ToolError(f"the editor could not read {path}: {error}") from None
            edit = rebase(edit, tool, arguments, current)
        if writer is None:
            await asyncio.to_thread(_write_at, edit, root_path)
            return edit.summary(), False
    except ToolError as error:
        return f"{tool}: {error}", True
    except OSError as error:
        return f"{tool}: {error.strerror or error}", True
    except Exception as error:  # e.g. a NUL byte in a path (ValueError)
        return f"{tool}: {type(error).__name__}: {error}", True
    try:
        await asyncio.wait_for(writer(path, edit.text), timeout_s)
    except TimeoutError:
        return f"{tool}: the editor did not write {path} within {timeout_s:g} s", True
    except Exception as error:  # the editor answered an error
        return f"{tool}: the editor could not write {path}: {error}", True
    return f"{edit.summary()} (written by the editor)", False
