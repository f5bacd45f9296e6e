"""The tool registry and the built-in tools an LLM agent may call.

Tools are off unless ``config.tools`` lists them. The built-ins that read,
``file_read``, ``grep`` and ``glob``, and the two that write, ``file_write``
and ``file_edit`` (:mod:`oma_host.llm.edits`), are each confined to the
agent's ``cwd`` through :mod:`oma_host.llm.confined` (a path that leads
outside it, by ``..``, an absolute path or a symlink, is refused, however the
names change during the call). Only regular files are read, so a FIFO cannot
block one. Given an ``apply_edit`` (the JSON-RPC client declared
``workspace.applyEdit``), the write tools send the edit to the client as
``workspace/applyEdit`` and write nothing themselves; a refusal is an error
result.
When a door gives the run a reader (:mod:`oma_host.core.file_view`),
``file_read`` checks the path the same way, then reads the editor's view of
that file instead of the disk.

Tools run in a worker thread so a large grep does not stall the host's event
loop. A cancelled run tells the worker to stop, which it does before the
next file or line; a call that runs past its time budget answers with what
it found so far. ``grep`` patterns run on RE2 (:mod:`oma_host.core.patterns`),
so no pattern can backtrack for seconds.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import stat
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path, PurePosixPath
from typing import Any

from oma_host.core.errors import InvalidParamsError
from oma_host.core.file_view import FileReader, current_file_reader
from oma_host.core.patterns import Pattern, PatternError, encode
from oma_host.llm.confined import (
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
from oma_host.llm.edits import Edit, plan_edit, plan_write, workspace_edit, write_file
from oma_host.providers.base import ToolSpec

_MAX_READ_BYTES = 256 * 1024
_MAX_GREP_FILE_BYTES = 1024 * 1024
_MAX_MATCHES = 200
_MAX_GLOB_RESULTS = 500
_CALL_BUDGET_S = 20.0  # then grep and glob answer with what they found


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable[[dict[str, Any], Root, Stop], str]


def _string(arguments: dict[str, Any], field: str) -> str:
    value = arguments.get(field)
    if not isinstance(value, str) or not value:
        raise ToolError(f"{field} must be a non-empty string")
    return value


def _open_file_read(arguments: dict[str, Any], root: Root) -> tuple[int, str]:
    """The regular file ``file_read`` names, opened beneath the root."""
    fd, path = open_beneath(root, _string(arguments, "path"), "path")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{path or '.'} is not a file")
    return fd, path


def _read_text(data: bytes) -> str:
    text = data[:_MAX_READ_BYTES].decode(errors="replace")
    if len(data) > _MAX_READ_BYTES:
        text += f"\n[truncated at {_MAX_READ_BYTES} bytes]"
    return text


def _file_read(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    fd, _ = _open_file_read(arguments, root)
    try:
        return _read_text(read_at_most(fd, _MAX_READ_BYTES + 1))
    finally:
        os.close(fd)


def _file_read_target(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    """The absolute path ``file_read`` may read, confined exactly as on disk,
    for an editor to read instead (see :mod:`oma_host.core.file_view`)."""
    fd, path = _open_file_read(arguments, root)
    os.close(fd)
    return os.path.join(root.path, path)


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
    if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_GREP_FILE_BYTES:
        return
    data = read_at_most(fd, _MAX_GREP_FILE_BYTES)
    if b"\0" in data[:4096]:
        return  # binary
    lines = data.decode(errors="replace").splitlines()
    for index in search.matching(lines, stop):
        matches.append(f"{path}:{index + 1}: {lines[index][:300]}")
        if len(matches) >= _MAX_MATCHES:
            return


def _enter(entry: Entry[bool]) -> bool | None:
    """grep walks into directories that are neither hidden nor symlinks."""
    return None if entry.linked or entry.name.startswith(".") else True


def _grep(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    search = _LineSearch(_string(arguments, "pattern"))
    where = arguments.get("path") or "."
    if not isinstance(where, str):
        raise ToolError("path must be a string")
    start_fd, start = open_beneath(root, where, "path")
    matches: list[str] = []
    note = ""
    try:
        if not stat.S_ISDIR(os.fstat(start_fd).st_mode):
            _search_file(start_fd, start, search, matches, stop)
        else:
            for entry in walk(root, start_fd, start, True, stop, _enter):
                fd = None if entry.is_dir else open_file(root, entry)
                if fd is None:
                    continue
                try:
                    _search_file(fd, entry.path, search, matches, stop)
                finally:
                    os.close(fd)
                if len(matches) >= _MAX_MATCHES:
                    break
    except TimeUp:
        note = f"[stopped after {stop.budget_s:g} s; search a narrower path]"
    finally:
        os.close(start_fd)
    if len(matches) >= _MAX_MATCHES:
        note = f"[stopped at {_MAX_MATCHES} matches]"
    if note:
        matches.append(note)
    return "\n".join(matches) if matches else "no matches"


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


def _glob(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    text = _string(arguments, "pattern")
    pure = PurePosixPath(text)
    if pure.is_absolute() or ".." in pure.parts:
        raise ToolError(f"pattern {text!r} is outside the agent's working directory")
    if not pure.parts:
        raise ToolError(f"pattern {text!r} names no path; give one such as **/*.py")
    pattern = _GlobPattern(pure.parts)
    found = ["."] if pattern.accepts(pattern.start) else []
    start_fd, _ = open_beneath(root, ".", "path")
    try:
        for entry in walk(root, start_fd, "", pattern.start, stop, pattern.enter):
            if pattern.accepts(pattern.step(entry.context, entry)):
                found.append(entry.path)
                if len(found) >= _MAX_GLOB_RESULTS:
                    found.append(f"[stopped at {_MAX_GLOB_RESULTS} paths]")
                    break
    except TimeUp:
        found.append(f"[stopped after {stop.budget_s:g} s; use a narrower pattern]")
    finally:
        os.close(start_fd)
    return "\n".join(found) if found else "no paths match"


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


def _file_write(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    edit = plan_write(arguments, root)
    write_file(edit, root)
    return edit.summary()


def _file_edit(arguments: dict[str, Any], root: Root, stop: Stop) -> str:
    edit = plan_edit(arguments, root)
    write_file(edit, root)
    return edit.summary()


_PLANS: dict[str, Callable[[dict[str, Any], Root], Edit]] = {
    "file_write": plan_write,
    "file_edit": plan_edit,
}
# Sends ``workspace/applyEdit`` params to the client; returns its answer.
EditApplier = Callable[[dict[str, Any]], Awaitable[Any]]


BUILTIN_TOOLS: dict[str, Tool] = {
    "file_read": Tool(
        ToolSpec(
            "file_read",
            "Read a text file under the working directory.",
            _schema({"path": {"type": "string", "description": "relative path"}}, ["path"]),
        ),
        _file_read,
    ),
    "grep": Tool(
        ToolSpec(
            "grep",
            "Search files under the working directory for a regular expression "
            "(RE2 syntax: no backreferences or lookaround); answers path:line: text.",
            _schema(
                {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "file or folder, default ."},
                },
                ["pattern"],
            ),
        ),
        _grep,
    ),
    "glob": Tool(
        ToolSpec(
            "glob",
            "List paths under the working directory matching a glob such as **/*.py.",
            _schema({"pattern": {"type": "string"}}, ["pattern"]),
        ),
        _glob,
    ),
    "file_write": Tool(
        ToolSpec(
            "file_write",
            "Create a file under the working directory, or replace all of its text.",
            _schema(
                {
                    "path": {"type": "string", "description": "relative path"},
                    "content": {"type": "string", "description": "the whole new text"},
                },
                ["path", "content"],
            ),
        ),
        _file_write,
    ),
    "file_edit": Tool(
        ToolSpec(
            "file_edit",
            "Replace one exact occurrence of old with new in a file under the working "
            "directory; old must occur exactly once (include surrounding lines to make it so).",
            _schema(
                {
                    "path": {"type": "string", "description": "relative path"},
                    "old": {"type": "string", "description": "the exact text to replace"},
                    "new": {"type": "string", "description": "the text to put in its place"},
                },
                ["path", "old", "new"],
            ),
        ),
        _file_edit,
    ),
}


class ToolRegistry:
    """The tools one agent may use, and the directory they are confined to."""

    def __init__(
        self,
        names: list[str] | None,
        cwd: str | None,
        apply_edit: EditApplier | None = None,
        edit_timeout_s: float = 30.0,
    ) -> None:
        self._apply_edit = apply_edit
        self._edit_timeout_s = edit_timeout_s
        self.tools: dict[str, Tool] = {}
        for index, name in enumerate(names or []):
            if name not in BUILTIN_TOOLS:
                known = ", ".join(sorted(BUILTIN_TOOLS))
                raise InvalidParamsError(
                    f"config.tools[{index}]: unknown tool {name!r} (available: {known})"
                )
            self.tools[name] = BUILTIN_TOOLS[name]
        self.root = str(Path(cwd or os.getcwd()).resolve())

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self.tools.values())

    async def call(self, name: str, arguments: Any) -> tuple[str, bool]:
        """Run a tool; returns (output, is_error). Whatever goes wrong comes
        back to the model as an error result, never as an exception."""
        tool = self.tools.get(name)
        if tool is None:
            available = ", ".join(self.tools) or "none"
            return (f"unknown tool {name!r}; the tools available are: {available}", True)
        if not isinstance(arguments, dict):
            return (f"{name}: the tool input must be a JSON object", True)
        stop = Stop(_CALL_BUDGET_S)
        reader = current_file_reader() if name == "file_read" else None
        try:
            if self._apply_edit is not None and name in _PLANS:
                return await self._through_client(name, arguments)
            if reader is not None:
                return (await self._read_through(reader, arguments, stop), False)
            return (await asyncio.to_thread(self._run, tool, arguments, stop), False)
        except asyncio.CancelledError:
            stop.cancel()  # the worker gives up at its next check
            raise
        except ToolError as error:
            return (f"{name}: {error}", True)
        except OSError as error:
            return (f"{name}: {error.strerror or error}", True)
        except Exception as error:  # e.g. a NUL byte in a path (ValueError)
            return (f"{name}: {type(error).__name__}: {error}", True)

    def _run(self, tool: Tool, arguments: dict[str, Any], stop: Stop) -> str:
        with Root(self.root) as root:
            return tool.run(arguments, root, stop)

    def _plan(self, name: str, arguments: dict[str, Any]) -> Edit:
        with Root(self.root) as root:
            return _PLANS[name](arguments, root)

    async def _through_client(self, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        """Plan the edit here, have the client apply it; its refusal, an error
        or no answer in time is an error result."""
        assert self._apply_edit is not None
        edit = await asyncio.to_thread(self._plan, name, arguments)
        params = workspace_edit(edit, self.root)
        try:
            answer = await asyncio.wait_for(self._apply_edit(params), self._edit_timeout_s)
        except TimeoutError:
            limit = f"{self._edit_timeout_s:g} s"
            return (f"{name}: the editor did not apply the edit within {limit}", True)
        except Exception as error:  # the client answered an error
            return (f"{name}: the editor could not apply the edit: {error}", True)
        if not isinstance(answer, dict) or answer.get("applied") is not True:
            reason = answer.get("failureReason") if isinstance(answer, dict) else None
            because = f": {reason}" if isinstance(reason, str) and reason else ""
            return (f"{name}: the editor refused the edit{because}", True)
        return (f"{edit.summary()} (applied in the editor)", False)

    async def _read_through(self, reader: FileReader, arguments: dict[str, Any], stop: Stop) -> str:
        """``file_read`` in the editor's view: the path is confined here, on
        disk, before the editor is asked for it."""
        target = Tool(BUILTIN_TOOLS["file_read"].spec, _file_read_target)
        path = await asyncio.to_thread(self._run, target, arguments, stop)
        try:
            text = await reader(path)
        except Exception as error:
            raise ToolError(f"the editor could not read {path}: {error}") from None
        return _read_text(text.encode(errors="replace"))
