"""Runs a command under Landlock (Linux 5.13+): the sandbox where bubblewrap is missing.

``python -I -S landlock.py --write DIR ... -- ARGV``: the process restricts
itself, then execs ``ARGV``. It may read and run anything, write only beneath
each ``DIR`` (and the few devices a command writes to: ``/dev/null``,
``/dev/tty``...), neither connect nor bind a TCP socket (ABI 4 and newer) and,
from ABI 6, neither reach an abstract unix socket nor signal a process outside
its own domain. UDP and named unix sockets stay open: Landlock does not
cover them (docs/tools.md, "The sandbox"). Standard library only: it
runs before the command, as a script.
"""

from __future__ import annotations

import ctypes
import os
import sys

# Since ABI 4, Landlock restricts TCP binds and connects.
NET_ABI = 4
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
# Filesystem rights (LANDLOCK_ACCESS_FS_*), and the ABI that brought each.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_V1_ALL = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
# Devices a command may write to, whatever else it may not.
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none (or is not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def _fs_rights(version: int) -> int:
    rights = _V1_ALL
    if version >= 2:
        rights |= _REFER
    if version >= 3:
        rights |= _TRUNCATE
    if version >= 5:
        rights |= _IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")
    return result


def restrict(writable: list[str]) -> None:
    """Restrict this process (and what it execs) as the module docstring says."""
    version = abi()
    if version < 1:
        raise OSError("the kernel has no Landlock")
    libc = _libc()
    fs_all = _fs_rights(version)
    attr = _RulesetAttr(fs_all, _NET_BIND_TCP | _NET_CONNECT_TCP if version >= NET_ABI else 0, 0)
    size = 8
    if version >= NET_ABI:
        size = 16
    if version >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = _check(
        libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "landlock_create_ruleset",
    )
    file_rights = _EXECUTE | _WRITE_FILE | _READ_FILE | (_TRUNCATE if version >= 3 else 0)
    rules = [("/", _EXECUTE | _READ_FILE | _READ_DIR)]
    rules += [(device, _WRITE_FILE | _READ_FILE) for device in _DEVICES]
    rules += [(folder, fs_all) for folder in writable]
    for path, rights in rules:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # not there: nothing to allow
        try:
            if not os.path.isdir(path):
                rights &= file_rights
            beneath = _PathBeneathAttr(rights, fd)
            _check(
                libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0),
                f"landlock_add_rule {path}",
            )
        finally:
            os.close(fd)
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(libc.syscall(_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    os.close(ruleset)


def main(args: list[str]) -> int:
    writable: list[str] = []
    while args and args[0] == "--write" and len(args) > 1:
        writable.append(args[1])
        args = args[2:]
    if not args or args[0] != "--" or len(args) < 2:
        sys.stderr.write("usage: landlock.py [--write DIR]... -- ARGV...\n")
        return 2
    argv = args[1:]
    try:
        restrict(writable)
    except OSError as error:
        sys.stderr.write(f"sandbox: {error.strerror or error}\n")
        return 126
    try:
        os.execvp(argv[0], argv)
    except OSError as error:
        sys.stderr.write(f"sandbox: {argv[0]}: {error.strerror or error}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
