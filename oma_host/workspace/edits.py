"""The write tools' planning: what ``file_write`` and ``file_edit`` change beneath ``cwd``.

An :class:`Edit` is planned first (the file read through the confined
descriptors, the new text, the LSP edit in UTF-16 units), then carried out as a
``workspace/applyEdit`` (:func:`workspace_edit`) or an atomic write
(:func:`write_file`), which replaces a name in a directory held open beneath
the root, so it cannot land outside. ``file_edit`` replaces exactly one
occurrence of ``old``. docs/tools.md, "Edits".
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from oma_host.workspace.confined import Root, ToolError, locate_missing, open_beneath, read_at_most

MAX_EDIT_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Edit:
    """One planned change of one file."""

    path: str  # as the model gave it, for messages
    directory: str  # the existing directory it goes in, relative to the root ("" for the root)
    missing: tuple[str, ...]  # directories to make below ``directory``
    name: str
    existing: str | None  # the file's text now; None for a new file
    file: os.stat_result | None  # the existing file as planned: mode, owner, links, identity
    text: str  # the whole new text
    start: tuple[int, int]  # the LSP range replaced (line, UTF-16 character)
    end: tuple[int, int]
    replacement: str

    def absolute(self, root: str) -> str:
        return os.path.join(root, self.directory, *self.missing, self.name)

    def resolved(self) -> str:
        """The file, relative to the root, as planned (symlinks resolved)."""
        return "/".join(part for part in (self.directory, *self.missing, self.name) if part)

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


def check_size(path: str, text: str) -> None:
    """Refuse a text the tools could not read or edit again once written."""
    # Cheap first: a character is at most four bytes of UTF-8.
    if len(text) > MAX_EDIT_BYTES // 4 and len(text.encode("utf-8")) > MAX_EDIT_BYTES:
        raise ToolError(
            f"{path} would be over {MAX_EDIT_BYTES} bytes, which the write tools cannot "
            "read or edit again; it was not written"
        )


def _read_text(fd: int, path: str) -> tuple[str, os.stat_result]:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{path} is not a file")
    if not info.st_mode & 0o222:
        raise ToolError(
            f"{path} is read-only (mode {stat.S_IMODE(info.st_mode):04o}); it was not changed"
        )
    if info.st_size > MAX_EDIT_BYTES:
        raise ToolError(
            f"{path} is over {MAX_EDIT_BYTES} bytes; the write tools take smaller files"
        )
    data = read_at_most(fd, MAX_EDIT_BYTES + 1)
    try:
        return data.decode("utf-8"), info
    except UnicodeDecodeError:
        raise ToolError(f"{path} is not UTF-8 text; it cannot be edited") from None


def _locate(
    root: Root, path: str
) -> tuple[str, tuple[str, ...], str, str | None, os.stat_result | None]:
    """Where ``path`` is: (directory, missing directories, name, text, the file's stat)."""
    try:
        fd, resolved = open_beneath(root, path, "path")
    except ToolError as error:
        if error.code != errno.ENOENT:
            raise
    else:
        try:
            text, info = _read_text(fd, path)
        finally:
            os.close(fd)
        directory, _, name = resolved.rpartition("/")
        return directory, (), name, text, info
    directory, missing, name = locate_missing(root, path)
    return directory, missing, name, None, None


def plan_write(path: str, content: str, root: Root) -> Edit:
    """``file_write``: the file's whole text becomes ``content``."""
    check_size(path, content)
    directory, missing, name, existing, info = _locate(root, path)
    end = (0, 0) if existing is None else _position(existing, len(existing))
    return Edit(path, directory, missing, name, existing, info, content, (0, 0), end, content)


def existing_file(path: str, root: Root) -> Edit:
    """``file_edit``'s file, located and read, not yet changed; a ToolError
    when there is none."""
    edit = plan_write(path, "", root)
    if edit.existing is None:
        raise ToolError(f"{path} does not exist; use file_write to create it")
    return edit


def plan_edit(path: str, old: str, new: str, root: Root) -> Edit:
    """``file_edit`` on the disk's text: the one occurrence of ``old`` becomes ``new``."""
    located = existing_file(path, root)
    assert located.existing is not None
    return replace_once(located, located.existing, old, new)


def replace_once(located: Edit, current: str, old: str, new: str) -> Edit:
    """``located``'s file with the one ``old`` of ``current`` (its text, the
    disk's or the editor's) made ``new``; a ToolError when ``old`` does not
    occur in it exactly once."""
    count = current.count(old)
    if count == 0:
        raise ToolError(
            f"old does not occur in {located.path}; read the file again and copy the text to "
            "replace exactly, whitespace included"
        )
    if count > 1:
        raise ToolError(
            f"old occurs {count} times in {located.path}; include more of the surrounding text "
            "so that it occurs once"
        )
    at = current.index(old)
    text = current[:at] + new + current[at + len(old) :]
    check_size(located.path, text)
    start, end = _position(current, at), _position(current, at + len(old))
    return replace(located, existing=current, text=text, start=start, end=end, replacement=new)


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
    """Write ``edit.text`` beneath the root (see the module docstring): into
    the directory planned, refused if it now resolves elsewhere."""
    fd, directory = open_beneath(root, edit.directory or ".", "path")
    try:
        if directory != edit.directory:
            raise ToolError(
                f"{edit.path}: its directory now leads to {directory or '.'}, not to "
                f"{edit.directory or '.'} as planned; nothing was written"
            )
        for name in edit.missing:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o777, dir_fd=fd)
            inner = os.open(name, _OPEN_DIR, dir_fd=fd)  # never through a symlink
            os.close(fd)
            fd = inner
        data = edit.text.encode("utf-8")
        if edit.file is not None and edit.file.st_nlink > 1:
            _write_in_place(edit, fd, data)  # every name of the file sees the new text
        elif not _replace_atomically(edit, fd, data):
            _write_in_place(edit, fd, data)  # its owner is one this user cannot give a new file
    finally:
        os.close(fd)


def _write_all(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]
    os.fsync(out)


def _replace_atomically(edit: Edit, directory: int, data: bytes) -> bool:
    """A temporary file with the old one's mode and owner, renamed over the
    name (which replaces a symlink there, never follows it); False, with
    nothing changed, when the old owner cannot be kept."""
    temporary = f".{edit.name}.{uuid.uuid4().hex[:12]}.tmp"
    old = edit.file
    # A new file gets 0o666 less the umask, as any editor's would.
    out = os.open(
        temporary,
        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
        0o666 if old is None else 0o600,
        dir_fd=directory,
    )
    try:
        try:
            if old is not None:
                if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
                    try:
                        os.fchown(out, old.st_uid, old.st_gid)
                    except PermissionError:
                        os.unlink(temporary, dir_fd=directory)
                        return False
                os.fchmod(out, stat.S_IMODE(old.st_mode))
            _write_all(out, data)
        finally:
            os.close(out)
        os.rename(temporary, edit.name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise
    return True


def _write_in_place(edit: Edit, directory: int, data: bytes) -> None:
    """Overwrite the planned file itself (its inode: hard links and owner
    kept), refused if the name now holds another file or a symlink."""
    assert edit.file is not None
    out = os.open(edit.name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory)
    try:
        now = os.fstat(out)
        if (now.st_dev, now.st_ino) != (edit.file.st_dev, edit.file.st_ino):
            raise ToolError(f"{edit.path} was replaced by another file; nothing was written")
        os.ftruncate(out, 0)
        _write_all(out, data)
    finally:
        os.close(out)
