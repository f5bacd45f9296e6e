"""File access confined to one directory tree, for the agent's built-in tools.

Checking a path and then opening it is a race a symlink swapped in between
wins, so nothing is opened by path: each component is opened with
``O_NOFOLLOW`` relative to the directory before it, from a descriptor of the
root, and a symlink's target is resolved by the same rules. :func:`walk`, under
``grep`` and ``glob``, never leaves the tree, never loops, and checks a
:class:`Stop` before every entry.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

# O_NONBLOCK: opening a FIFO must not wait for a writer. O_NOCTTY: a terminal
# opened by accident must not become the host's controlling terminal.
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_OPEN_DIR = _OPEN | os.O_DIRECTORY
_MAX_SYMLINKS = 40  # the kernel's own limit before ELOOP
# Every directory on the way down is held open: a bound on descriptors per call.
_MAX_DEPTH = 128
# What open(O_NOFOLLOW) says when the name is a symlink: ELOOP on Linux and
# macOS, EMLINK on FreeBSD, and ENOTDIR on Linux when O_DIRECTORY is asked too.
_MAYBE_SYMLINK = (errno.ELOOP, errno.EMLINK, errno.ENOTDIR)


class ToolError(Exception):
    """A tool call that cannot be carried out; its message goes back to the model.
    ``code`` is the errno behind it, when an OS call failed (the write tools
    tell a missing file, ENOENT, from the rest)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class Cancelled(Exception):
    """The call's run was cancelled: nobody waits for its answer any more."""


class TimeUp(Exception):
    """The call has spent its time budget."""


class Stop:
    """When a tool call must end: its run was cancelled (set from the event
    loop's thread) or its time budget is spent."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self._deadline = time.monotonic() + budget_s
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        """Raise :class:`Cancelled` or :class:`TimeUp` if the call must end."""
        if self._cancelled.is_set():
            raise Cancelled
        if time.monotonic() > self._deadline:
            raise TimeUp


class Root:
    """An open descriptor of the confining directory, for one tool call.
    ``fd``: a descriptor of ``path`` the caller opened (and hands over);
    ``inside``: what refusals call the directory."""

    def __init__(
        self, path: str, *, fd: int | None = None, inside: str = "the agent's working directory"
    ) -> None:
        self.path = path  # absolute, symlinks resolved
        self.inside = inside
        if fd is not None:
            self.fd = fd
            return
        try:
            self.fd = os.open(path, _OPEN_DIR)
        except OSError as error:
            raise ToolError(f"the working directory {path}: {error.strerror}") from None

    def __enter__(self) -> Root:
        return self

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)


# What refusals call the folders of an agent with additional directories.
EVERY_FOLDER = "the agent's working directory and its additional directories"


def root_of(path: str, roots: Sequence[str]) -> str:
    """The folder of ``roots`` (the agent's ``cwd`` first, then its
    additional directories; absolute, symlinks resolved) a tool confines
    ``path`` to: ``cwd`` for a relative path; for an absolute one, the first
    folder it lies beneath once ``..`` is folded, else ``cwd`` (which then
    refuses it as outside). Lexical: each folder is a tree of its own, and a
    symlink in one never leads into another."""
    if not path.startswith("/") or len(roots) < 2:
        return roots[0]
    normal = os.path.normpath(path)
    for root in roots:
        if normal == root or normal.startswith(root.rstrip("/") + "/"):
            return root
    return roots[0]


def named(root: str, cwd: str, resolved: str) -> str:
    """The file ``resolved`` (relative to the folder ``root``) as the agent
    and its permission rules name it: relative to ``cwd`` in ``cwd``,
    absolute in an additional directory."""
    if root == cwd:
        return resolved
    return os.path.join(root, resolved) if resolved else root


def _outside(root: Root, what: str, path: str) -> ToolError:
    return ToolError(f"{what} {path!r} is outside {root.inside}")


def _parts_beneath(root: Root, absolute: str) -> list[str] | None:
    """The components of an absolute path below the root, or None if it is
    not below it. Lexical: ``..`` is folded first, and whatever remains is
    still resolved component by component from the root."""
    normal = os.path.normpath(absolute)
    if normal == root.path:
        return []
    prefix = root.path.rstrip("/") + "/"
    return normal[len(prefix) :].split("/") if normal.startswith(prefix) else None


def _open_component(parent: int, name: str, last: bool, what: str, path: str) -> int | None:
    """``name`` opened in ``parent`` without following it; None when it may
    be a symlink. Only the last component may be a file, and a device, FIFO
    or socket there is refused before anything opens it."""
    try:
        if last:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                raise ToolError(f"{what} {path!r} is not a file or a directory")
        return os.open(name, _OPEN if last else _OPEN_DIR, dir_fd=parent)
    except OSError as error:
        if error.errno in _MAYBE_SYMLINK:
            return None
        raise ToolError(f"{what} {path!r}: {error.strerror}", error.errno) from None


def _read_link(parent: int, name: str, what: str, path: str) -> str | None:
    """The symlink's target; None if ``name`` is no symlink after all (it
    was swapped back meanwhile, or a file stood where a directory must)."""
    try:
        return os.readlink(name, dir_fd=parent)
    except OSError as error:
        if error.errno == errno.EINVAL:
            return None
        raise ToolError(f"{what} {path!r}: {error.strerror}") from None


def open_beneath(root: Root, path: str, what: str) -> tuple[int, str]:
    """Open ``path`` (relative to the root, or absolute and inside it) with
    every component resolved beneath the root. Returns the descriptor and the
    path as resolved, relative to the root (``""`` for the root itself).
    Refuses, with a ToolError naming ``what``, a path that leads outside, and
    anything but a regular file or a directory (without opening it)."""
    parts = _parts_beneath(root, path) if path.startswith("/") else path.split("/")
    if parts is None:
        raise _outside(root, what, path)
    pending = parts[::-1]  # popped from the end
    held: list[tuple[int, str]] = []  # directories below the root, innermost last
    tries = 0
    try:
        while pending:
            name = pending.pop()
            if name in ("", "."):
                continue
            if name == "..":
                if not held:
                    raise _outside(root, what, path)
                os.close(held.pop()[0])
                continue
            parent = held[-1][0] if held else root.fd
            if len(held) >= _MAX_DEPTH:
                raise ToolError(f"{what} {path!r} is over {_MAX_DEPTH} directories deep")
            fd = _open_component(parent, name, not pending, what, path)
            if fd is not None:
                held.append((fd, name))
                continue
            tries += 1
            if tries > _MAX_SYMLINKS:
                raise ToolError(f"{what} {path!r}: too many levels of symbolic links")
            target = _read_link(parent, name, what, path)
            if target is None:
                if pending:  # a file where a directory must be: the open said so
                    raise ToolError(f"{what} {path!r}: {os.strerror(errno.ENOTDIR)}")
                pending.append(name)  # swapped back from a symlink meanwhile: again
            elif target.startswith("/"):
                beneath = _parts_beneath(root, target)
                if beneath is None:
                    raise _outside(root, what, path)
                while held:
                    os.close(held.pop()[0])
                pending.extend(reversed(beneath))
            else:
                pending.extend(reversed(target.split("/")))
        if not held:
            return os.open(".", _OPEN_DIR, dir_fd=root.fd), ""
        resolved = "/".join(name for _, name in held)
        return held.pop()[0], resolved
    finally:
        for fd, _ in held:
            os.close(fd)


def locate_missing(root: Root, path: str) -> tuple[str, tuple[str, ...], str]:
    """Where a file that does not exist yet would go: (the deepest existing
    directory on the way, resolved beneath the root; the directories below
    it still to make; the file's name). A ToolError when the way leads
    outside, is no directory, or names no file."""
    if path.startswith("/"):
        parts_beneath = _parts_beneath(root, path)
        if parts_beneath is None:
            raise _outside(root, "path", path)
        path = "/".join(parts_beneath)
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
        return directory, missing, parts[-1]
    raise ToolError(f"path {path!r} names no file")  # unreachable: depth 0 is the root


def resolve_beneath(root: Root, path: str) -> str | None:
    """``path`` as the tools would open it, relative to the root (``""`` for
    the root): symlinks inside the tree followed, a part that does not exist
    yet kept as written (``..`` and ``.`` folded); None when it leads outside
    the tree or cannot be resolved. What permission rules match."""
    try:
        fd, resolved = open_beneath(root, path, "path")
    except ToolError as error:
        if error.code != errno.ENOENT:
            return None
    else:
        os.close(fd)
        return resolved
    try:
        directory, missing, name = locate_missing(root, path)
    except ToolError:
        return None
    return "/".join(part for part in (directory, *missing, name) if part)


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd``."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass(slots=True)
class Entry(Generic[T]):
    """A regular file or a directory met by :func:`walk`. A symlink beneath
    the root is reported as what it leads to, with ``linked`` set."""

    path: str  # relative to the root, as walked
    name: str
    is_dir: bool
    linked: bool
    context: T  # what ``enter`` answered for the directory it is in
    parent_fd: int  # valid until the walk moves on
    # What ``path`` leads to, relative to the root: itself unless a symlink
    # is on the way (the entry's own, or a symlinked directory walked into).
    resolved: str = ""


_DIR, _FILE, _LINK = range(3)


def _listing(fd: int) -> Iterator[tuple[str, int]]:
    """The directory's names in order, with what each is: a directory, a
    regular file or a symlink (FIFOs, sockets and devices are left out).
    Read from the directory entries themselves, with no stat per name where
    the file system records types; whatever is opened later is checked
    again on its descriptor."""
    listing = []
    with os.scandir(fd) as entries:
        for item in entries:
            if item.is_symlink():
                listing.append((item.name, _LINK))
            elif item.is_dir(follow_symlinks=False):
                listing.append((item.name, _DIR))
            elif item.is_file(follow_symlinks=False):
                listing.append((item.name, _FILE))
    listing.sort()
    return iter(listing)


def _through_link(root: Root, path: str) -> tuple[bool, str] | None:
    """Whether the symlink at ``path`` leads to a directory (True) or a
    regular file (False) beneath the root, and where (relative to the root);
    None if it leads out, dangles, loops or leads to anything else."""
    try:
        fd, resolved = open_beneath(root, path, "path")
    except ToolError:
        return None
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return stat.S_ISDIR(mode), resolved
    return None


def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return (info.st_dev, info.st_ino)


@dataclass(slots=True)
class _Frame(Generic[T]):
    fd: int
    path: str
    context: T
    names: Iterator[tuple[str, int]]
    identity: tuple[int, int]
    resolved: str  # what ``path`` leads to


def walk(
    root: Root,
    start_fd: int,
    start_path: str,
    context: T,
    stop: Stop,
    enter: Callable[[Entry[T]], T | None],
) -> Iterator[Entry[T]]:
    """Every file and directory beneath the directory ``start_fd`` (at
    ``start_path`` under the root; the caller keeps and closes the
    descriptor; ``start_path`` is resolved, no symlink on the way), depth
    first in name order. ``enter`` is asked about each directory: None skips
    it, anything else walks into it and becomes the ``context`` of what is
    found there. A directory already being walked (through a symlink or a
    bind mount) is never walked into again, nor one more than ``_MAX_DEPTH``
    levels down."""
    frames = [
        _Frame(start_fd, start_path, context, _listing(start_fd), _identity(start_fd), start_path)
    ]
    try:
        while frames:
            frame = frames[-1]
            name, kind = next(frame.names, ("", -1))
            if kind < 0:
                frames.pop()
                if frames:  # the start descriptor is the caller's
                    os.close(frame.fd)
                continue
            stop.check()
            path = f"{frame.path}/{name}" if frame.path else name
            resolved = f"{frame.resolved}/{name}" if frame.resolved else name
            is_dir = kind == _DIR
            if kind == _LINK:
                leads_to = _through_link(root, path)
                if leads_to is None:
                    continue
                is_dir, resolved = leads_to
            entry = Entry(path, name, is_dir, kind == _LINK, frame.context, frame.fd, resolved)
            yield entry
            inner = enter(entry) if is_dir and len(frames) < _MAX_DEPTH else None
            if inner is not None:
                child = _open_child(root, entry, {f.identity for f in frames})
                if child is not None:
                    fd, identity, resolved = child
                    frames.append(_Frame(fd, path, inner, _listing(fd), identity, resolved))
    finally:
        for frame in frames[1:]:
            os.close(frame.fd)


def _open_entry(root: Root, entry: Entry[T]) -> tuple[int, os.stat_result, str] | None:
    """``entry`` opened again, with what its descriptor says it is and where
    it leads (relative to the root); None if it is gone, or no longer
    beneath the root, meanwhile."""
    try:
        if entry.linked:
            fd, resolved = open_beneath(root, entry.path, "path")
        else:
            flags = _OPEN_DIR if entry.is_dir else _OPEN
            fd, resolved = os.open(entry.name, flags, dir_fd=entry.parent_fd), entry.resolved
    except (OSError, ToolError):
        return None
    return fd, os.fstat(fd), resolved


def _open_child(
    root: Root, entry: Entry[T], above: set[tuple[int, int]]
) -> tuple[int, tuple[int, int], str] | None:
    opened = _open_entry(root, entry)
    if opened is None:
        return None
    fd, info, resolved = opened
    identity = (info.st_dev, info.st_ino)
    if identity in above or not stat.S_ISDIR(info.st_mode):  # a loop back up, or a swap
        os.close(fd)
        return None
    return fd, identity, resolved


def open_file(root: Root, entry: Entry[T]) -> tuple[int, str] | None:
    """A descriptor of the regular file ``entry``, and the file it is
    (relative to the root; a symlink may have been swapped since the walk
    met it); None if it is no longer a regular file beneath the root."""
    opened = _open_entry(root, entry)
    if opened is None:
        return None
    fd, info, resolved = opened
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, resolved
