"""What the host knows of a tool before it runs: its declaration.

A :class:`ToolDeclaration` is the one record of a tool's facts: the
:class:`ToolSpec` the model sees (name, description, input schema), its effect (``read``,
``write``, ``execute`` or ``other``), and how a call's target is found (what
permission rules match, and the file or folder an editor may show). The
permission policy's defaults follow the effect, and so does the ACP door's
``kind``; both read the same declaration for a built-in tool and for an MCP
server's. The LLM backend declares the built-in tools (one module each, in
``oma_host.llm.tools``) and registers them here, so a door, which may not
import the backend, can look one up by name (:func:`builtin_tool`); the first
lookup imports that package by name, as the backend registry does.

No pydantic here: the declaration is plain data, and the params model that
makes a built-in's schema stays with the tool.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Effect = Literal["read", "write", "execute", "other"]
# What a call's target is, for permission rules: a path under ``cwd``
# (matched as the file it names), a text matched as given (a glob's
# pattern), a shell command line (matched one simple command at a time),
# or not known (an MCP tool: any argument may be a path).
TargetKind = Literal["path", "text", "command", "unknown"]
# How an editor names what a tool call does (ACP's ``ToolKind``).
ToolKind = Literal["read", "edit", "search", "execute", "think", "other"]
# The ACP kind of each effect (a read that searches is ``search``, one that
# touches nothing ``think``).
EFFECT_KINDS: dict[Effect, ToolKind] = {
    "read": "read",
    "write": "edit",
    "execute": "execute",
    "other": "other",
}
# Reads one string from a call's input (which may be anything the model sent).
ArgumentReader = Callable[[Any], str | None]
# Reads the text change a write proposes from its input: (the text it
# replaces, None for a whole file's, and the new text), or None.
ChangeReader = Callable[[Any], tuple[str | None, str] | None]
# Imported on the first lookup of a built-in tool; it registers every built-in.
BUILTIN_TOOLS_PACKAGE = "oma_host.llm.tools"


def first_string(*fields: str) -> ArgumentReader:
    """A reader of the first of ``fields`` that holds a string."""

    def read(arguments: Any) -> str | None:
        if not isinstance(arguments, dict):
            return None
        for field in fields:
            value = arguments.get(field)
            if isinstance(value, str):
                return value
        return None

    return read


def path_argument(field: str, default: str | None = None) -> ArgumentReader:
    """A reader of the path in ``field`` (relative to ``cwd`` or absolute);
    ``default`` when it is missing, empty or not a string."""

    def read(arguments: Any) -> str | None:
        value = arguments.get(field) if isinstance(arguments, dict) else None
        return value if isinstance(value, str) and value else default

    return read


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: its name, what it does, and its input
    schema (what a provider's adapter sends)."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolDeclaration(ToolSpec):
    """One tool's facts (see the module docstring): the model's view of it,
    and what the host knows besides."""

    effect: Effect
    # The call's main argument: what a permission rule's ``pattern`` matches,
    # the permission event's ``target`` (a path, or a shell tool's command).
    target: ArgumentReader
    target_kind: TargetKind
    # The file or folder the call touches, as the model gave it, for an
    # editor to show (ACP ``locations``); None, or a reader answering None:
    # nothing to show.
    location: ArgumentReader | None = None
    # A read that searches (grep, glob): ACP shows it as ``search``.
    search: bool = False
    # A write's proposed change, for an editor to show as a diff (at the
    # ``location``) before the call runs and in its permission request.
    change: ChangeReader | None = None
    # A call that touches nothing, the agent's own thinking aloud (a plan):
    # ACP shows it as ``think``.
    think: bool = False
    # The tool keeps its own work within ``toolTimeoutMs`` and says in its
    # result what running past it did (the shell: the process group ended);
    # the call's bound then leaves it a moment more to do so.
    bounded: bool = False


def string_fields(old: str | None, new: str) -> ChangeReader:
    """A reader of the change in fields ``old`` (None: the whole file is
    replaced) and ``new``, when they hold strings."""

    def read(arguments: Any) -> tuple[str | None, str] | None:
        if not isinstance(arguments, dict) or not isinstance(arguments.get(new), str):
            return None
        if old is None:
            return None, arguments[new]
        replaced = arguments.get(old)
        return (replaced, arguments[new]) if isinstance(replaced, str) else None

    return read


_builtins: dict[str, ToolDeclaration] = {}
_loaded = False


def register_builtin_tool(declaration: ToolDeclaration) -> None:
    """Make a built-in tool known by name (a later registration replaces it)."""
    _builtins[declaration.name] = declaration


def builtin_tool(name: str) -> ToolDeclaration | None:
    """The built-in tool called ``name``, or None (an MCP tool, a wrapped
    agent's own tool, a name the model made up)."""
    global _loaded
    if not _loaded:
        importlib.import_module(BUILTIN_TOOLS_PACKAGE)
        _loaded = True
    return _builtins.get(name)
