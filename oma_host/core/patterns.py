"""Regular expressions from untrusted hands (a model's ``grep``, a scorer), run with RE2.

Python's ``re`` backtracks, and a pattern such as ``(a+)+$`` holds the GIL
while nothing else is answered; RE2 matches in linear time and releases the
GIL. The price is its syntax (no backreferences, no lookaround); a pattern it
cannot run is a :class:`PatternError` giving RE2's reason.
"""

from __future__ import annotations

from typing import Any

import re2

_LIMITS = (
    "RE2 matches in linear time, so it has no backreferences or lookaround; write \\z, not \\Z"
)


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why."""


class Pattern:
    """A compiled pattern that answers one question: does it occur in a text?"""

    __slots__ = ("_regexp", "source")

    def __init__(self, source: str) -> None:
        options = re2.Options()
        options.log_errors = False  # the reason is raised, not printed to stderr
        # Only "does it occur" is asked; without capture groups RE2 stays on
        # its DFA, which is many times faster on hostile patterns.
        options.never_capture = True
        try:
            self._regexp: Any = re2.compile(source, options)
        except re2.error as error:
            reason = error.args[0] if error.args else "invalid pattern"
            if isinstance(reason, bytes):
                reason = reason.decode(errors="replace")
            raise PatternError(f"{reason} ({_LIMITS})") from None
        self.source = source

    def search(self, text: str) -> bool:
        """True when the pattern occurs anywhere in ``text``."""
        return self.find(encode(text), 0) is not None

    def find(self, data: bytes, position: int) -> int | None:
        """The byte offset in UTF-8 ``data`` where the first match at or
        after ``position`` starts (assertions such as ``^`` still see what
        comes before it), or None."""
        found = self._regexp.search(data, position)
        return None if found is None else int(found.start())


def encode(text: str) -> bytes:
    """``text`` as RE2 reads it. Handing RE2 bytes skips the binding's
    character-offset bookkeeping; surrogatepass keeps a lone surrogate (valid
    in JSON) from raising."""
    return text.encode("utf-8", "surrogatepass")
