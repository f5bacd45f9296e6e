"""A watcher process that ends what the host started when the host dies, SIGKILL included.

Every command the host starts carries ``OMA_HOST_SPAWN=<host pid>-<tag>`` in
its environment. The warden, in a session of its own, holds a pipe from the
host; at its end of file it ends every process carrying the host's marker, and
its group (SIGTERM, then SIGKILL). A shell keeper's marker (:data:`KEEPER`) is
spared: the keeper ends its command's tree itself over a longer grace. The
warden runs this file with ``python -I -S``, and only for the ``oma-host``
command.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time

MARKER = "OMA_HOST_SPAWN"
KEEPER = "keeper"  # the kind of marker the warden spares (see the module docstring)
_GRACE_S = 1.0  # SIGTERM first; SIGKILL what is left after this
_ROUNDS = 3  # sweeps, for descendants that forked while being ended

_warden: subprocess.Popen[bytes] | None = None
_numbers = itertools.count(1)
# Markers held by owners that are not a bridge's spawn (an MCP server), and
# the host's children that are no command's (the warden, MCP servers): the
# orphan sweeps of ``oma_host.process.orphans`` leave both alone.
_held: set[str] = set()
_kept: set[int] = set()


def marker_value(tag: str) -> str:
    """This host's marker for one command it starts (``tag`` tells them apart)."""
    return f"{os.getpid()}-{tag}"


def hold_marker(kind: str) -> str:
    """A marker for a process of ``kind`` the host starts itself, held until
    :func:`release_marker`; the warden is started with the first."""
    marker = marker_value(f"{kind}-{next(_numbers)}")
    _held.add(marker)
    start_warden()
    return marker


def release_marker(marker: str) -> None:
    _held.discard(marker)


def marker_held(marker: str) -> bool:
    """Whether ``marker`` is held (its process is running as the host's own)."""
    return marker in _held


def keep_child(pid: int) -> None:
    """A child of the host that is no command's (see ``_kept``)."""
    _kept.add(pid)


def release_child(pid: int) -> None:
    _kept.discard(pid)


def kept_child(pid: int) -> bool:
    return pid in _kept


def start_warden() -> int:
    """Start this host's warden if it is not running yet; its pid. The host
    keeps the warden's stdin open for as long as it lives."""
    global _warden
    if _warden is None or _warden.poll() is not None:
        _warden = subprocess.Popen(
            [sys.executable, "-I", "-S", os.path.abspath(__file__), str(os.getpid())],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        keep_child(_warden.pid)
    return _warden.pid


# -- the warden process ----------------------------------------------------------------


def _marked(prefix: bytes) -> dict[int, int]:
    """pid -> process group of every process whose environment holds
    ``prefix``, keepers aside."""
    spared = prefix + f"{KEEPER}-".encode()
    found: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as file:
                environ = file.read()
            with open(f"/proc/{name}/stat", "rb") as file:
                stat = file.read()
        except OSError:  # gone, or not ours to read
            continue
        if any(
            entry.startswith(prefix) and not entry.startswith(spared)
            for entry in environ.split(b"\0")
        ):
            # The process group is the fifth field, after the parenthesised name.
            found[int(name)] = int(stat.rsplit(b")", 1)[1].split()[2])
    return found


def _signal_all(processes: dict[int, int], sig: signal.Signals) -> None:
    for group in set(processes.values()):
        if group > 1:
            with contextlib.suppress(OSError):
                os.killpg(group, sig)
    for pid in processes:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def end_marked(host_pid: int) -> None:
    """End every process marked by ``host_pid``, and their process groups."""
    prefix = f"{MARKER}={host_pid}-".encode()
    found = _marked(prefix)
    for _ in range(_ROUNDS):
        if not found:
            break
        _signal_all(found, signal.SIGTERM)
        deadline = time.monotonic() + _GRACE_S
        while found and time.monotonic() < deadline:
            time.sleep(0.05)
            found = _marked(prefix)
        _signal_all(found, signal.SIGKILL)
        time.sleep(0.05)
        found = _marked(prefix)


def main(argv: list[str]) -> int:
    """The warden: wait for the host's end (its pipe's end of file), then end
    what it marked. Signals that would end it early are ignored."""
    host_pid = int(argv[1])
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    end_marked(host_pid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
