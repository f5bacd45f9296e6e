"""Checkpoints of an agent's workspace in a shadow git repository of the host's, and restoring them.

Before each turn that may change files the host records the agent's folders
(its ``cwd`` and additional directories), and again after it, as commits of a
repository in its state directory, never the user's ``.git``: git runs with
argv lists, an environment of its own (no ``GIT_*`` of the host's, no system
or global configuration, no hooks, no fsmonitor, no filters or line-ending
conversion, no signing, no automatic gc). The workspace's ``.gitignore``
rules apply; ``.git`` and nested repositories are left out, and so are files
over :data:`MAX_FILE_BYTES` and those past :data:`MAX_TOTAL_BYTES` or
:data:`MAX_FILES` (each is noted in the checkpoint, so a restore leaves them
alone and says so). docs/security.md, "Checkpoints".

A checkpoint's tree holds one subtree per folder (``0``, ``1``...), the
folders' paths (``roots``) and what each left out (``0.skipped``...).
:meth:`Checkpoints.restore` puts back the files the agent changed since a
checkpoint, removes those created since, and leaves alone (and reports)
those changed outside the agent since the last turn.

Blocking: call these in a worker thread.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field

from oma_host.core.backends import FilesRestored
from oma_host.core.places import private_folder

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 4 * 1024 * 1024  # a larger file is not recorded
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # files past this total are not recorded
MAX_FILES = 20_000  # files past this count are not recorded
GIT_TIMEOUT_S = 60.0  # each git command
# The files a folder may list (outside its .gitignore rules) before it is
# taken for no project (a home folder) and no checkpoint is recorded.
MAX_LISTED = 5 * MAX_FILES

BRANCH = "refs/heads/checkpoints"  # every checkpoint, each the parent of the next
LAST_TURN = "refs/oma/last-turn"  # the workspace as the agent's last turn left it
BEFORE_REWIND = "refs/oma/before-rewind"  # the workspace as the last rewind found it

# Settings given to every git command, over anything a configuration says.
_SETTINGS = (
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.symlinks", "true"),
    ("core.fileMode", "true"),
    ("core.excludesFile", os.devnull),
    ("core.attributesFile", os.devnull),
    ("core.bare", "false"),
    ("commit.gpgSign", "false"),
    ("gc.auto", "0"),
    ("gc.autoDetach", "false"),
    ("maintenance.auto", "false"),
    ("advice.addEmbeddedRepo", "false"),
)
# $GIT_DIR/info/attributes comes before the workspace's .gitattributes: no
# filter, no line-ending or encoding conversion, no keyword expansion.
_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "oma-host",
    "GIT_AUTHOR_EMAIL": "oma-host@localhost",
    "GIT_COMMITTER_NAME": "oma-host",
    "GIT_COMMITTER_EMAIL": "oma-host@localhost",
}
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class CheckpointError(Exception):
    """A checkpoint that could not be recorded or restored; the message says why."""


@dataclass(frozen=True)
class Recorded:
    """A checkpoint: its commit, and the files it left out (each folder's,
    as absolute paths) and why."""

    commit: str
    left_out: dict[str, str] = field(default_factory=dict)


# A folder's files at a checkpoint: path (relative) -> "<mode> <blob>", or
# "skipped <size> <mtime>" for one left out.
_Files = dict[str, str]


class Checkpoints:
    """The shadow repository at ``git_dir`` recording the folders ``roots``
    (absolute, the agent's ``cwd`` first)."""

    def __init__(self, git_dir: str, roots: Sequence[str]) -> None:
        self.git_dir = git_dir
        self.roots = [os.path.realpath(root) for root in roots]

    # -- git ------------------------------------------------------------------------

    def _git(
        self,
        args: Sequence[str],
        *,
        root: str | None = None,
        index: str | None = None,
        data: bytes | None = None,
    ) -> bytes:
        """The output of ``git ARGS`` on the shadow repository (with
        ``root`` as its work tree and ``index`` as its index file);
        CheckpointError naming the command and git's complaint."""
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "LC_ALL": "C",
            "HOME": self.git_dir,
            "XDG_CONFIG_HOME": self.git_dir,
            "GIT_DIR": self.git_dir,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            **_IDENTITY,
        }
        if root is not None:
            env["GIT_WORK_TREE"] = root
        if index is not None:
            env["GIT_INDEX_FILE"] = index
        settings = [part for key, value in _SETTINGS for part in ("-c", f"{key}={value}")]
        try:
            done = subprocess.run(
                ["git", "--no-pager", *settings, *args],
                input=data,
                capture_output=True,
                env=env,
                cwd=root or self.git_dir,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except FileNotFoundError:
            raise CheckpointError("git is not installed (checkpoints need it)") from None
        except subprocess.TimeoutExpired:
            raise CheckpointError(
                f"git {args[0]} did not finish within {GIT_TIMEOUT_S:g} s"
            ) from None
        except OSError as error:
            raise CheckpointError(f"git could not be run: {error.strerror}") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {said[-1] if said else done.returncode}")
        return done.stdout

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The repository, made on first use, held by this process alone
        (another host on the same session waits)."""
        private_folder(os.path.dirname(self.git_dir), create=True)
        if not os.path.isdir(os.path.join(self.git_dir, "objects")):
            private_folder(self.git_dir, create=True)
            self._git(["init", "-q", "--template=", self.git_dir])
        private_folder(self.git_dir)
        info = os.path.join(self.git_dir, "info")
        os.makedirs(info, mode=0o700, exist_ok=True)
        with open(os.path.join(info, "attributes"), "w", encoding="utf-8") as file:
            file.write(_ATTRIBUTES)
        with open(os.path.join(info, "exclude"), "w", encoding="utf-8") as file:
            file.write(".git\n")
        fd = os.open(os.path.join(self.git_dir, "oma.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _ref(self, name: str) -> str | None:
        try:
            return self._git(["rev-parse", "-q", "--verify", f"{name}^{{commit}}"]).decode().strip()
        except CheckpointError:
            return None

    # -- recording ------------------------------------------------------------------

    def record(self, label: str, *, last_turn: bool = False) -> Recorded:
        """Record the folders now as a new checkpoint (``label`` its commit
        message); ``last_turn``: as the agent's last turn left them."""
        with self._locked():
            return self._record(label, LAST_TURN if last_turn else None)

    def _record(self, label: str, ref: str | None) -> Recorded:
        entries: list[bytes] = []
        left_out: dict[str, str] = {}
        counted = [0, 0]  # files and bytes recorded so far, over every folder
        for number, root in enumerate(self.roots):
            tree, skipped = self._record_folder(number, root, counted)
            entries.append(f"040000 tree {tree}\t{number}".encode())
            blob = self._blob(json.dumps(skipped, sort_keys=True).encode())
            entries.append(f"100644 blob {blob}\t{number}.skipped".encode())
            for path, why in skipped.items():
                left_out[os.path.join(root, path)] = why.split(" ", 1)[0]
        roots = self._blob(json.dumps(self.roots).encode())
        entries.append(f"100644 blob {roots}\troots".encode())
        tree = self._git(["mktree", "-z"], data=b"\0".join(entries) + b"\0").decode().strip()
        parent = self._ref(BRANCH)
        commit_args = ["commit-tree", tree, "-m", label]
        if parent is not None:
            commit_args += ["-p", parent]
        commit = self._git(commit_args).decode().strip()
        self._git(["update-ref", BRANCH, commit])
        if ref is not None:
            self._git(["update-ref", ref, commit])
        if left_out:
            log.info("checkpoint %s left out %d file(s)", commit[:12], len(left_out))
        return Recorded(commit, left_out)

    def _blob(self, data: bytes) -> str:
        return self._git(["hash-object", "-w", "--stdin"], data=data).decode().strip()

    def _record_folder(self, number: int, root: str, counted: list[int]) -> tuple[str, _Files]:
        """One folder recorded in a fresh index: its tree, and the files it
        left out (``skipped <why> <size> <mtime>``)."""
        index = os.path.join(self.git_dir, f"index-{number}")
        with suppress(FileNotFoundError):
            os.unlink(index)
        if not os.path.isdir(root):
            return self._git(["write-tree"], index=index).decode().strip(), {}
        listed = self._git(
            ["ls-files", "-z", "--others", "--exclude-standard"], root=root, index=index
        )
        paths = listed.decode("utf-8", "surrogateescape").split("\0")
        if len(paths) > MAX_LISTED:
            raise CheckpointError(
                f"{root} holds over {MAX_LISTED:,} files its .gitignore rules do not leave "
                "out: too many to record"
            )
        chosen: list[str] = []
        skipped: _Files = {}
        for path in sorted(filter(None, paths)):
            if path.endswith("/"):  # a repository of its own inside
                skipped[path.rstrip("/")] = "skipped repository 0 0"
                continue
            try:
                info = os.lstat(os.path.join(root, path))
            except OSError:
                continue  # gone meanwhile
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                continue
            why = None
            if info.st_size > MAX_FILE_BYTES:
                why = "too-large"
            elif counted[0] >= MAX_FILES or counted[1] + info.st_size > MAX_TOTAL_BYTES:
                why = "over-bounds"
            if why is not None:
                skipped[path] = f"skipped {why} {info.st_size} {info.st_mtime_ns}"
                continue
            counted[0] += 1
            counted[1] += info.st_size
            chosen.append(path)
        if chosen:
            names = b"\0".join(path.encode("utf-8", "surrogateescape") for path in chosen)
            self._git(
                ["update-index", "--add", "--remove", "-z", "--stdin"],
                root=root,
                index=index,
                data=names + b"\0",
            )
        return self._git(["write-tree"], root=root, index=index).decode().strip(), skipped

    # -- reading --------------------------------------------------------------------

    def _folders(self, commit: str) -> dict[str, _Files]:
        """A checkpoint's folders, by path, each with its files."""
        roots = json.loads(self._git(["cat-file", "blob", f"{commit}:roots"]))
        folders: dict[str, _Files] = {}
        for number, root in enumerate(roots):
            files: _Files = {}
            listing = self._git(["ls-tree", "-r", "-z", f"{commit}:{number}"])
            for line in filter(None, listing.split(b"\0")):
                meta, _, path = line.partition(b"\t")
                mode, _kind, blob = meta.decode().split(" ")
                files[path.decode("utf-8", "surrogateescape")] = f"{mode} {blob}"
            skipped = self._git(["cat-file", "blob", f"{commit}:{number}.skipped"])
            files.update(json.loads(skipped))
            folders[root] = files
        return folders

    def has(self, commit: str) -> bool:
        """Whether ``commit`` is a checkpoint of this repository."""
        if not os.path.isdir(os.path.join(self.git_dir, "objects")):
            return False
        try:
            self._git(["cat-file", "-e", f"{commit}:roots"])
        except CheckpointError:
            return False
        return True

    # -- restoring ------------------------------------------------------------------

    def restore(self, commit: str) -> FilesRestored:
        """Put the folders back as checkpoint ``commit`` recorded them: each
        file that differs now is put back (or removed, when it was created
        since), unless it changed outside the agent since its last turn (it
        differs from the last turn's checkpoint), which is left as it is.
        The folders as found are recorded first (:data:`BEFORE_REWIND`), and
        as left afterwards (the last turn's, for the next restore)."""
        with self._locked():
            if not self.has(commit):
                raise CheckpointError(f"checkpoint {commit[:12]} is not in {self.git_dir}")
            then = self._folders(commit)
            last_commit = self._ref(LAST_TURN)
            last = self._folders(last_commit) if last_commit is not None else {}
            now_commit = self._record("before a rewind", BEFORE_REWIND).commit
            now = self._folders(now_commit)
            done = FilesRestored()
            for number, root in enumerate(self.roots):
                if root in then:
                    tree = f"{commit}:{list(then).index(root)}"
                    recorded = (then[root], last.get(root))
                    self._restore_folder(number, root, tree, recorded, now[root], done)
            self._record("after a rewind", LAST_TURN)
        for found in (done.restored, done.removed, done.left_alone, done.not_recorded):
            found.sort()
        return done

    def _restore_folder(
        self,
        number: int,
        root: str,
        tree: str,
        recorded: tuple[_Files, _Files | None],
        now: _Files,
        done: FilesRestored,
    ) -> None:
        """Restore one folder to ``tree`` (the checkpoint's), whose files
        were ``recorded`` then and at the last turn's end."""
        then, last = recorded
        outside = set() if last is None else _differing(last, now)
        put_back: list[str] = []
        remove: list[str] = []
        for path in sorted(_differing(then, now)):
            where = os.path.join(root, path)
            if path in outside:
                done.left_alone.append(where)
            elif path not in then:
                remove.append(path)
            elif then[path].startswith("skipped "):
                done.not_recorded.append(where)
            else:
                put_back.append(path)
        if put_back:
            # The checkpoint's folder in an index of its own, and checked out
            # from there: git replaces a symbolic link or a directory on the
            # way rather than writing through it.
            index = os.path.join(self.git_dir, f"restore-{number}")
            with suppress(FileNotFoundError):
                os.unlink(index)
            self._git(["read-tree", tree], root=root, index=index)
            names = b"\0".join(path.encode("utf-8", "surrogateescape") for path in put_back)
            checkout = ["checkout-index", "-f", "-z", "--stdin"]
            self._git(checkout, root=root, index=index, data=names + b"\0")
            done.restored.extend(os.path.join(root, path) for path in put_back)
        if remove:
            # A file the checkpoint's .gitignore rules ignore was not recorded
            # then: it is not the agent's to remove.
            names = b"\0".join(path.encode("utf-8", "surrogateescape") for path in remove)
            try:
                ignored_out = self._git(
                    ["check-ignore", "-z", "--no-index", "--stdin"], root=root, data=names + b"\0"
                )
            except CheckpointError:  # exit status 1: none is ignored
                ignored_out = b""
            ignored = {p.decode("utf-8", "surrogateescape") for p in ignored_out.split(b"\0")}
            for path in remove:
                if path not in ignored and _remove_beneath(root, path):
                    done.removed.append(os.path.join(root, path))


def _differing(before: _Files, after: _Files) -> set[str]:
    """The paths whose file is not the same in the two (added, removed or changed)."""
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


def _remove_beneath(root: str, path: str) -> bool:
    """Remove the file (or symbolic link) ``path`` of the folder ``root``,
    each directory on the way opened without following a link (a link there
    means the file is not where it was recorded: it is left alone); then its
    directories that were left empty, up to the folder. Whether it was removed."""
    parts = path.split("/")
    held: list[int] = []
    try:
        fd = os.open(root, _DIRECTORY)
        held.append(fd)
        for part in parts[:-1]:
            try:
                held.append(os.open(part, _DIRECTORY, dir_fd=held[-1]))
            except OSError:
                return False
        try:
            info = os.stat(parts[-1], dir_fd=held[-1], follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                return False
            os.unlink(parts[-1], dir_fd=held[-1])
        except OSError:
            return False
        for depth in range(len(parts) - 1, 0, -1):
            try:
                os.rmdir(parts[depth - 1], dir_fd=held[depth - 1])
            except OSError:  # not empty (or gone): the folders above are not either
                break
        return True
    finally:
        for fd in held:
            os.close(fd)
