"""``glob {pattern}``: the paths in the agent's folders matching a glob such as ``**/*.py``.

A relative pattern is matched beneath ``cwd``; an absolute one that starts
with one of the agent's folders (an additional directory) beneath that
folder, and what it finds is named by absolute paths. The confined walk
enters a directory only while the pattern can still match beneath it, stops
at 500 paths or the call's time budget, and leaves out what the permission
rules keep from ``glob``, saying how many.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import PurePosixPath

from oma_host.core.tools import GLOB
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare, left_out_note
from oma_host.workspace.confined import (
    EVERY_FOLDER,
    Entry,
    Root,
    Stop,
    TimeUp,
    ToolError,
    open_beneath,
    walk,
)

MAX_RESULTS = 500


class GlobParams(ToolParams):
    pattern: NonEmpty


class _GlobPattern:
    """A glob as a small automaton over path components, as pathlib's glob:
    ``**`` stands for any number of directories (never through a symlink),
    any other component for one name (fnmatch rules, case-sensitive,
    dotfiles included). A state is the index of the component to match next;
    the walk goes into a directory only while some state can go on."""

    def __init__(self, components: tuple[str, ...]) -> None:
        self.components = components
        self.start = self._closure([0])

    def _closure(self, states: Iterable[int]) -> frozenset[int]:
        found: set[int] = set()
        todo = list(states)
        while todo:
            state = todo.pop()
            if state not in found:
                found.add(state)
                if state < len(self.components) and self.components[state] == "**":
                    todo.append(state + 1)  # "**" may stand for no directory at all
        return frozenset(found)

    def step(self, states: frozenset[int], entry: Entry[frozenset[int]]) -> frozenset[int]:
        following = []
        for state in states:
            if state == len(self.components):
                continue
            component = self.components[state]
            if component == "**":
                if entry.is_dir and not entry.linked:  # "**" follows no symlink
                    following.append(state)
            elif fnmatch.fnmatchcase(entry.name, component):
                following.append(state + 1)
        return self._closure(following)

    def accepts(self, states: frozenset[int]) -> bool:
        return len(self.components) in states

    def enter(self, entry: Entry[frozenset[int]]) -> frozenset[int] | None:
        inner = self.step(entry.context, entry)
        return inner if any(state < len(self.components) for state in inner) else None


def _split(text: str, workspace: Workspace) -> tuple[str, tuple[str, ...]]:
    """The folder a pattern is matched beneath, and its components below it
    (see the module docstring); a ToolError for one that leads outside
    every folder or names no path."""
    pure = PurePosixPath(text)
    folder, parts = workspace.root, pure.parts
    if pure.is_absolute():
        for root in workspace.roots:
            prefix = PurePosixPath(root).parts
            if parts[: len(prefix)] == prefix:
                folder, parts = root, parts[len(prefix) :]
                break
        else:
            parts = ("..",)
    if ".." in parts:
        inside = EVERY_FOLDER if workspace.folders else "the agent's working directory"
        raise ToolError(f"pattern {text!r} is outside {inside}")
    if not parts:
        raise ToolError(f"pattern {text!r} names no path; give one such as **/*.py")
    return folder, parts


def _glob(parts: tuple[str, ...], root: Root, stop: Stop, workspace: Workspace) -> str:
    pattern = _GlobPattern(parts)
    folder = root.path

    def enter(entry: Entry[frozenset[int]]) -> frozenset[int] | None:
        inner = pattern.enter(entry)
        if inner is None or workspace.left_out(
            entry.path, entry.resolved, reads=False, root=folder
        ):
            return None
        return inner

    found = [workspace.shown(folder, "")] if pattern.accepts(pattern.start) else []
    left_out = 0
    note = ""
    start_fd, _ = open_beneath(root, ".", "path")
    try:
        for entry in walk(root, start_fd, "", pattern.start, stop, enter):
            if not pattern.accepts(pattern.step(entry.context, entry)):
                continue
            if workspace.left_out(entry.path, entry.resolved, reads=False, root=folder):
                left_out += 1
                continue
            found.append(workspace.shown(folder, entry.path))
            if len(found) >= MAX_RESULTS:
                note = f"[stopped at {MAX_RESULTS} paths]"
                break
    except TimeUp:
        note = f"[stopped after {stop.budget_s:g} s; use a narrower pattern]"
    finally:
        os.close(start_fd)
    # "no paths match" only when the search went through: a stopped one says so.
    lines = found or ([] if note else ["no paths match"])
    if left_out:
        lines.append(left_out_note(left_out))
    if note:
        lines.append(note)
    return "\n".join(lines)


async def _run(params: GlobParams, workspace: Workspace, stop: Stop) -> str:
    folder, parts = _split(params.pattern, workspace)
    return await workspace.in_thread(lambda root: _glob(parts, root, stop, workspace), folder)


TOOL = declare(GLOB, GlobParams, _run)
