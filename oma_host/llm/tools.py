"""The tool registry and the built-in tools an LLM agent may call.

Tools are off unless ``config.tools`` lists them. The built-ins read only:
``file_read``, ``grep`` and ``glob``, each confined to the agent's ``cwd``:
a path that resolves outside it (``..``, an absolute path, a symlink out) is
refused. Tools run in a worker thread so a large grep does not stall the
host's event loop; only regular files are read, so a FIFO cannot block one.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oma_host.core.errors import InvalidParamsError
from oma_host.providers.base import ToolSpec

_MAX_READ_BYTES = 256 * 1024
_MAX_GREP_FILE_BYTES = 1024 * 1024
_MAX_MATCHES = 200
_MAX_GLOB_RESULTS = 500


class ToolError(Exception):
    """A tool call that cannot be carried out; its message goes back to the model."""


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    run: Callable[[dict[str, Any], Path], str]


def _confined(root: Path, relative: object, field: str) -> Path:
    if not isinstance(relative, str) or not relative:
        raise ToolError(f"{field} must be a non-empty string")
    candidate = (root / relative).resolve()
    if candidate != root and root not in candidate.parents:
        raise ToolError(f"{field} {relative!r} is outside the agent's working directory")
    return candidate


def _display(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path != root else "."


def _file_read(arguments: dict[str, Any], root: Path) -> str:
    path = _confined(root, arguments.get("path"), "path")
    if not path.is_file():  # also refuses FIFOs and devices
        raise ToolError(f"{_display(root, path)} is not a file")
    with path.open("rb") as handle:
        data = handle.read(_MAX_READ_BYTES + 1)
    text = data[:_MAX_READ_BYTES].decode(errors="replace")
    if len(data) > _MAX_READ_BYTES:
        text += f"\n[truncated at {_MAX_READ_BYTES} bytes]"
    return text


def _walk_files(root: Path, start: Path) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    for directory, dirnames, filenames in os.walk(start, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            path = Path(directory, name)
            resolved = path.resolve()
            # Symlinks out are skipped, and so are FIFOs, sockets and devices.
            if (resolved == root or root in resolved.parents) and resolved.is_file():
                yield path


def _grep(arguments: dict[str, Any], root: Path) -> str:
    pattern = arguments.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("pattern must be a non-empty string")
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ToolError(f"pattern is not a valid regular expression: {error}") from None
    start = _confined(root, arguments.get("path") or ".", "path")
    matches: list[str] = []
    for path in _walk_files(root, start):
        if path.stat().st_size > _MAX_GREP_FILE_BYTES:
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:
            continue  # binary
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            if regex.search(line):
                matches.append(f"{_display(root, path)}:{number}: {line[:300]}")
                if len(matches) >= _MAX_MATCHES:
                    return "\n".join(matches) + f"\n[stopped at {_MAX_MATCHES} matches]"
    return "\n".join(matches) if matches else "no matches"


def _glob(arguments: dict[str, Any], root: Path) -> str:
    pattern = arguments.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        raise ToolError("pattern must be a non-empty string")
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ToolError(f"pattern {pattern!r} is outside the agent's working directory")
    found = []
    for path in sorted(root.glob(pattern)):
        resolved = path.resolve()
        if resolved == root or root in resolved.parents:
            found.append(_display(root, path))
            if len(found) >= _MAX_GLOB_RESULTS:
                found.append(f"[stopped at {_MAX_GLOB_RESULTS} paths]")
                break
    return "\n".join(found) if found else "no paths match"


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


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
            "Search files under the working directory for a regular expression; "
            "answers path:line: text.",
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
}


class ToolRegistry:
    """The tools one agent may use, and the directory they are confined to."""

    def __init__(self, names: list[str] | None, cwd: str | None) -> None:
        self.tools: dict[str, Tool] = {}
        for index, name in enumerate(names or []):
            if name not in BUILTIN_TOOLS:
                known = ", ".join(sorted(BUILTIN_TOOLS))
                raise InvalidParamsError(
                    f"config.tools[{index}]: unknown tool {name!r} (available: {known})"
                )
            self.tools[name] = BUILTIN_TOOLS[name]
        self.root = Path(cwd or os.getcwd()).resolve()

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
        try:
            return (await asyncio.to_thread(tool.run, arguments, self.root), False)
        except ToolError as error:
            return (f"{name}: {error}", True)
        except OSError as error:
            return (f"{name}: {error.strerror or error}", True)
        except Exception as error:  # e.g. a NUL byte in a path (ValueError)
            return (f"{name}: {type(error).__name__}: {error}", True)
