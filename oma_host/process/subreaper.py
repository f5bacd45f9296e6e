"""The host as a child subreaper (Linux), so orphans below it can be found, ended and reaped.

Only the ``oma-host`` command enables it, before any agent runs: a subreaper
must reap every orphan that comes to it, and an application embedding the
library may reap its children its own way.
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
