"""Where oma-host keeps the user's own files, and the one rule for the folders that hold them.

It imports only ``os`` and ``stat``, so the ACP door reads its agents file
before it answers ``initialize`` without loading the host.
"""

from __future__ import annotations

import os
import stat


class FolderError(OSError):
    """A folder oma-host will not keep the user's files in, and why (its
    message names the folder)."""


# The agents file this process's ACP door serves (``--agents``), once it is read.
_served_agents_file: str | None = None


def config_dir() -> str:
    """``$XDG_CONFIG_HOME/oma-host`` (``~/.config/oma-host`` by default): the
    agents file, the user's slash commands and the keys ``oma-host login`` keeps."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "oma-host")


def private_folder(path: str, *, create: bool = False) -> str:
    """``path`` as a folder only this user can enter: made 0700 (its missing
    parents as the umask says) when ``create`` and it is missing; when it
    exists and belongs to this user, whatever its mode gave the group and
    others is taken away. A symbolic link (its target is not looked at: it
    may be anyone's), anything but a folder, and another user's folder are
    a :class:`FolderError` naming the path and the reason; a missing folder
    is FileNotFoundError unless ``create``. What the state directory, the
    config folder and the TCP token directory pass through."""
    if create:
        try:  # noqa: SIM105 (contextlib would be one more import before the ACP answer)
            os.makedirs(path, mode=0o700, exist_ok=True)
        except FileExistsError:  # a link or a file there: said below
            pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as error:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            reason = "is a symbolic link; oma-host keeps its files only in a real folder"
        elif mode and not stat.S_ISDIR(mode):
            reason = "is not a folder"
        else:
            reason = f"cannot be opened: {error.strerror}"
        raise FolderError(f"the folder {path} {reason}") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid():
            raise FolderError(
                f"the folder {path} belongs to another user (uid {info.st_uid}; "
                f"you are uid {os.getuid()})"
            )
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o700)
    finally:
        os.close(fd)
    return path


def serve_agents_file(path: str | None) -> None:
    """Record ``path`` as the agents file this process serves (None: the
    default one, in :func:`config_dir`), for :func:`own_config`."""
    global _served_agents_file
    _served_agents_file = None if path is None else os.path.abspath(path)


def own_config() -> tuple[str, ...]:
    """The host's own configuration, as real absolute paths: the folder
    :func:`config_dir` and the agents file the ACP door serves. The
    permission policy lets no tool change them unasked."""
    places = [config_dir()]
    if _served_agents_file is not None:
        places.append(_served_agents_file)
    return tuple(os.path.realpath(place) for place in places)
