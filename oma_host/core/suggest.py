"""``did you mean X?`` for a name that is not known: the nearest known one.

Apart from :mod:`oma_host.core.validation` (which needs pydantic), so the
server can suggest a method name before anything heavy is loaded.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``; did you mean X?`` for the known name nearest to ``name`` (a typo
    such as ``agent/rum`` or ``systemPromt``), else ``""``."""
    nearest = difflib.get_close_matches(name, sorted(set(known)), n=1, cutoff=0.75)
    return f"; did you mean {nearest[0]}?" if nearest else ""
