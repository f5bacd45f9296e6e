"""A generated part of a hand-written doc, between two marker lines, so it cannot drift.

Each generator declares its part once; ``python3 -m <its module>`` rewrites the
file, and its test checks that :meth:`GeneratedPart.spliced` leaves the file as
it is.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GeneratedPart:
    path: Path
    start: str  # the marker line before the generated text
    end: str  # the marker line after it
    build: Callable[[], str]
    module: str  # the module whose ``main`` rewrites it

    def spliced(self, document: str) -> str:
        """``document`` with the generated text between the markers."""
        start = document.index(self.start) + len(self.start)
        return document[:start] + "\n" + self.build() + document[document.index(self.end) :]

    def main(self, argv: list[str]) -> int:
        """Rewrite the file (the module's command line; it takes no arguments)."""
        if argv:
            print(f"usage: python3 -m {self.module}", file=sys.stderr)
            return 2
        self.path.write_text(self.spliced(self.path.read_text(encoding="utf-8")))
        return 0
