"""The OS sandbox a ``shell`` command runs in: bubblewrap, or Landlock where bwrap is missing.

``workspace-write``: the command reads the whole machine and writes only in
the agent's ``cwd``, its additional directories and a private temp folder
(``TMPDIR``, removed after), in a network namespace of its own (no network,
not even the host's 127.0.0.1). ``read-only``: the same, but only the private
temp folder is writable. Either way the protected places (:func:`protected_places`:
``.git/hooks``, ``.git/config``, ``.oma``, the host's own configuration) stay
read-only. Which tool confines is probed once a process (:func:`sandbox_support`).
docs/tools.md, "The sandbox".
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import oma_host.workspace.landlock as landlock_wrapper
from oma_host.core.config import PermissionMode, SandboxMode
from oma_host.core.places import own_config

PROBE_TIMEOUT_S = 10.0
# What the protected places are, inside a folder a command may write.
GIT_PROTECTED = ("hooks", "config")
OWN_FOLDER = ".oma"
# The Landlock wrapper runs as a script of the interpreter running the host.
_LANDLOCK = os.path.abspath(landlock_wrapper.__file__)
# Words in a failed command's output that the sandbox may be why.
SANDBOX_SIGNS = (
    "Read-only file system",
    "Permission denied",
    "Operation not permitted",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "No address associated with hostname",
    "Connection refused",
)


def chosen_sandbox(mode: PermissionMode | None, sandbox: SandboxMode | None) -> SandboxMode:
    """The sandbox an agent's commands run in: its ``sandbox`` setting, but
    ``workspace-write`` in the ``auto`` permission mode when that is off or
    unset (auto runs commands unasked only inside a sandbox)."""
    if mode == "auto" and sandbox in (None, "off"):
        return "workspace-write"
    return sandbox or "off"


@dataclass(frozen=True)
class Support:
    """What confines commands on this machine: ``tool`` (None: nothing,
    ``reason`` says why)."""

    tool: Literal["bwrap", "landlock"] | None
    reason: str | None = None
    # The bwrap found, for "bwrap".
    path: str | None = None


_lock = threading.Lock()
_support: Support | None = None


def sandbox_support() -> Support:
    """Probe once a process (blocking: call it from a worker thread) which
    tool confines commands: bwrap when ``bwrap ... /bin/sh -c :`` runs,
    else Landlock when the kernel's ABI confines files and TCP (4 or newer)."""
    global _support
    with _lock:
        if _support is None:
            _support = _probe()
        return _support


def _probe() -> Support:
    reasons: list[str] = []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        reasons.append("bubblewrap (bwrap) is not installed")
    else:
        with private_tmp() as tmp:
            argv = bwrap_argv(bwrap, ["/bin/sh", "-c", ":"], cwd=tmp, writable=(), tmp=tmp)
            try:
                done = subprocess.run(
                    argv,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=PROBE_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                reasons.append(f"bwrap could not run: {error}")
            else:
                if done.returncode == 0:
                    return Support("bwrap", path=bwrap)
                said = done.stderr.decode(errors="replace").strip().splitlines()
                reasons.append(f"bwrap fails here: {said[-1] if said else done.returncode}")
    abi = landlock_wrapper.abi()
    if abi >= landlock_wrapper.NET_ABI:
        return Support("landlock")
    if abi > 0:
        reasons.append(f"the kernel's Landlock (ABI {abi}) cannot keep commands off the network")
    else:
        reasons.append("the kernel has no Landlock")
    return Support(None, "; ".join(reasons))


def unavailable(sandbox: SandboxMode, roots: Sequence[str] = ()) -> str | None:
    """Why ``sandbox`` cannot confine a command writing in ``roots`` here
    (None: it can; blocking, as :func:`sandbox_support`)."""
    if sandbox == "off":
        return None
    found = sandbox_support()
    if found.tool is None:
        return found.reason
    if found.tool == "landlock" and sandbox == "workspace-write":
        inside = [place for place in protected_places(roots, create=False) if place]
        if inside:
            return (
                "bubblewrap is missing, and Landlock cannot keep "
                f"{inside[0]} read-only inside a folder the command may write"
            )
    return None


def protected_places(roots: Sequence[str], *, create: bool = True) -> list[str]:
    """The places inside ``roots`` (the folders a command may write) that
    stay read-only: each root's ``.git/hooks`` and ``.git/config`` (all of
    ``.git`` when one of them is a symlink), its ``.oma``, and the host's own
    configuration. ``create``: a repository's missing ``.git/hooks`` is made
    (empty), so that no hook can be planted there."""
    places: list[str] = []
    for root in roots:
        git = os.path.join(root, ".git")
        if os.path.isdir(git) and not os.path.islink(git):
            inside = [os.path.join(git, name) for name in GIT_PROTECTED]
            if any(os.path.islink(path) for path in inside):
                places.append(git)
            else:
                hooks = inside[0]
                if create and not os.path.lexists(hooks):
                    with contextlib.suppress(OSError):
                        os.mkdir(hooks, 0o755)
                places.extend(path for path in inside if os.path.exists(path))
        own = os.path.join(root, OWN_FOLDER)
        if os.path.isdir(own):
            places.append(os.path.realpath(own))
    for place in own_config():
        if os.path.exists(place) and any(_beneath(place, root) for root in roots):
            places.append(place)
    return list(dict.fromkeys(places))


def _beneath(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def bwrap_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    cwd: str,
    writable: Sequence[str],
    tmp: str,
    protected: Sequence[str] = (),
) -> list[str]:
    """``argv`` under bwrap: the machine read-only, ``writable`` and ``tmp``
    writable, ``protected`` read-only over them, its own network, process
    and IPC namespaces and session, ended with its parent."""
    wrapped = [
        bwrap,
        "--die-with-parent",
        "--new-session",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
    ]
    for place in (*writable, tmp):
        wrapped += ["--bind", place, place]
    for place in protected:
        wrapped += ["--ro-bind", place, place]
    return [*wrapped, "--chdir", cwd, "--", *argv]


def landlock_argv(argv: Sequence[str], *, writable: Sequence[str], tmp: str) -> list[str]:
    """``argv`` under the Landlock wrapper (:mod:`oma_host.workspace.landlock`)."""
    folders = [part for place in (*writable, tmp) for part in ("--write", place)]
    return [sys.executable, "-I", "-S", _LANDLOCK, *folders, "--", *argv]


def sandboxed_argv(
    argv: Sequence[str], sandbox: SandboxMode, *, cwd: str, roots: Sequence[str], tmp: str
) -> list[str]:
    """``argv`` confined as ``sandbox`` says (not "off"), writing in
    ``roots`` (workspace-write) and ``tmp``; blocking, as
    :func:`sandbox_support`. ToolError-free: call :func:`unavailable` first."""
    found = sandbox_support()
    writable = [root for root in roots if os.path.isdir(root)]
    if sandbox != "workspace-write":
        writable = []
    if found.tool == "bwrap" and found.path is not None:
        shielded = protected_places(writable)
        return bwrap_argv(found.path, argv, cwd=cwd, writable=writable, tmp=tmp, protected=shielded)
    return landlock_argv(argv, writable=writable, tmp=tmp)


def remove_tmp(path: str) -> None:
    """Remove the folder ``path`` and all in it, the folders a command made
    unwritable or unreadable made so again first."""
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    for folder, names, _ in os.walk(path):
        for name in names:  # before the walk goes into each
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(folder, name), stat.S_IRWXU, follow_symlinks=False)
    shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def private_tmp() -> Iterator[str]:
    """A temp folder of one command's own (mode 0700), removed after."""
    path = tempfile.mkdtemp(prefix="oma-sandbox-")
    try:
        yield path
    finally:
        remove_tmp(path)


def sandbox_note(sandbox: SandboxMode) -> str:
    """What a sandboxed command was confined to, in a line of its result."""
    where = (
        "writes only in the working directory, the additional directories and $TMPDIR"
        if sandbox == "workspace-write"
        else "writes only in $TMPDIR"
    )
    return f"the sandbox ({sandbox}: {where}, no network)"
