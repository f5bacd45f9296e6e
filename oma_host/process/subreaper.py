"""The host as a child subreaper (Linux): a process that loses its parent
below the host (a daemon's double fork, a grandchild whose parent exited) is
reparented to the host instead of to init, so it can still be found, ended
with the run that started it, and reaped.

The ``oma-host`` command enables it as the process starts (``oma_host.cli.main``),
before any agent runs. The library never does on its own: a subreaper must
collect the exit status of every orphan that comes to it, and an application
embedding the library may reap its children its own way. Ending and reaping
the orphans is the external bridges' work (``oma_host.process.orphans``), done only
when this was enabled.
"""

from __future__ import annotations

import sys

_PR_SET_CHILD_SUBREAPER = 36  # from <linux/prctl.h>
_enabled = False


def enable_subreaper() -> bool:
    """Make this process a child subreaper; False where that is not
    possible (not Linux, or the call failed), and nothing changes."""
    global _enabled
    if sys.platform != "linux":
        return False
    import ctypes  # only here: asking whether it is enabled stays free of it

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return False
    _enabled = True
    return True


def subreaper_enabled() -> bool:
    """Whether :func:`enable_subreaper` made this process a subreaper."""
    return _enabled
