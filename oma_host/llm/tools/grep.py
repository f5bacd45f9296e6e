"""``grep {pattern, path?}``: lines matching a regular expression in the agent's folders.

A ``path`` that is absolute and inside an additional directory searches
there, and its matches are named by absolute paths. Patterns run on RE2
(:mod:`oma_host.core.patterns`), so none can backtrack for seconds. The
confined walk skips hidden and symlinked directories, large and
binary files, stops at 200 matches or the call's time budget, and leaves out
what the permission rules keep from ``grep`` or ``file_read``, saying how many.
"""

from __future__ import annotations

import os
import re
import stat
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from pydantic import Field, field_validator

from oma_host.core.patterns import Pattern, PatternError, encode
from oma_host.core.tools import GREP
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare, left_out_note
from oma_host.workspace.confined import (
    Entry,
    Root,
    Stop,
    TimeUp,
    ToolError,
    open_beneath,
    open_file,
    read_at_most,
    walk,
)

MAX_FILE_BYTES = 1024 * 1024
MAX_MATCHES = 200


class GrepParams(ToolParams):
    pattern: NonEmpty
    path: str = Field(".", description="file or folder, default .")

    @field_validator("path", mode="before")
    @classmethod
    def _whole_tree(cls, value: Any) -> Any:
        # A missing, null or empty path is the whole tree, as the description says.
        return value or "."


class _LineSearch:
    """A pattern matched line by line, as grep does, at about one RE2 call
    per matching line rather than one per line (an RE2 call costs many times
    what an ``re`` call does). The lines are joined by newlines and searched
    in multi-line mode, where whatever the pattern finds in a line it also
    finds at the same place in the joined text (``^`` and ``$`` hold at line
    ends; ``\\b`` sees a non-word character beyond them). So the line holding
    the first match in the joined text is the first line that can match; it
    is checked on its own, and the search goes on from the next line. Only
    ``\\A``, ``\\z`` and a flag group turning multi-line off break that
    reasoning; such patterns are tried on every line."""

    _TEXT_BOUND = re.compile(r"\\[Az]|\(\?[a-zA-Z]*-")

    def __init__(self, source: str) -> None:
        try:
            self.line = Pattern(source)
        except PatternError as error:
            raise ToolError(f"pattern is not one RE2 can run: {error}") from None
        self.joined = None if self._TEXT_BOUND.search(source) else Pattern(f"(?m){source}")

    def matching(self, lines: list[str], stop: Stop) -> Iterator[int]:
        """The indexes of the lines the pattern occurs in."""
        if self.joined is None:
            for index, line in enumerate(lines):
                stop.check()
                if self.line.search(line):
                    yield index
            return
        data = encode("\n".join(lines))
        found = self.joined.find(data, 0)
        if found is None or not lines:
            return
        starts = [0, *accumulate(len(encode(line)) + 1 for line in lines)]
        while found is not None:
            stop.check()
            index = bisect_right(starts, found) - 1
            if self.line.search(lines[index]):
                yield index
            if index + 1 >= len(lines):
                return
            found = self.joined.find(data, starts[index + 1])


def _search_file(fd: int, path: str, search: _LineSearch, matches: list[str], stop: Stop) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
        return
    data = read_at_most(fd, MAX_FILE_BYTES)
    if b"\0" in data[:4096]:
        return  # binary
    lines = data.decode(errors="replace").splitlines()
    for index in search.matching(lines, stop):
        matches.append(f"{path}:{index + 1}: {lines[index][:300]}")
        if len(matches) >= MAX_MATCHES:
            return


def _enter(entry: Entry[bool]) -> bool | None:
    """grep walks into directories that are neither hidden nor symlinks."""
    return None if entry.linked or entry.name.startswith(".") else True


def _grep(params: GrepParams, root: Root, stop: Stop, workspace: Workspace) -> str:
    search = _LineSearch(params.pattern)
    start_fd, start = open_beneath(root, params.path, "path")
    matches: list[str] = []
    left_out = 0
    note = ""

    folder = root.path

    def enter(entry: Entry[bool]) -> bool | None:
        nonlocal left_out
        inner = _enter(entry)
        if inner is not None and workspace.left_out(
            entry.path, entry.resolved, reads=True, root=folder
        ):
            left_out += 1
            return None
        return inner

    try:
        if not stat.S_ISDIR(os.fstat(start_fd).st_mode):
            if workspace.left_out(start, start, reads=True, root=folder):
                left_out += 1
            else:
                shown = workspace.shown(folder, start)
                _search_file(start_fd, shown, search, matches, stop)
        else:
            for entry in walk(root, start_fd, start, True, stop, enter):
                opened = None if entry.is_dir else open_file(root, entry)
                if opened is None:
                    continue
                fd, resolved = opened
                try:
                    if workspace.left_out(entry.path, resolved, reads=True, root=folder):
                        left_out += 1
                    else:
                        shown = workspace.shown(folder, entry.path)
                        _search_file(fd, shown, search, matches, stop)
                finally:
                    os.close(fd)
                if len(matches) >= MAX_MATCHES:
                    break
    except TimeUp:
        note = f"[stopped after {stop.budget_s:g} s; search a narrower path]"
    finally:
        os.close(start_fd)
    if len(matches) >= MAX_MATCHES:
        note = f"[stopped at {MAX_MATCHES} matches]"
    # "no matches" only when the search went through: a stopped one says so.
    lines = matches or ([] if note else ["no matches"])
    if left_out:
        lines.append(left_out_note(left_out))
    if note:
        lines.append(note)
    return "\n".join(lines)


async def _run(params: GrepParams, workspace: Workspace, stop: Stop) -> str:
    return await workspace.in_thread(lambda root: _grep(params, root, stop, workspace), params.path)


TOOL = declare(GREP, GrepParams, _run)
