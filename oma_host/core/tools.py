"""What the host knows of a tool before it runs, and the built-in tools' facts.

Permissions and ACP kinds follow a tool's effect. The built-ins' facts are
data here, below ``llm``, which implements them, and the bridges and doors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
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


@dataclass(frozen=True, kw_only=True)
class ToolFacts:
    """What the host knows of a tool besides its input schema: what the
    permission policy, the ACP bridge and the doors read."""

    name: str
    description: str
    effect: Effect
    # The call's main argument: what a permission rule's ``pattern`` matches,
    # the permission event's ``target`` (a path, or a shell tool's command).
    target: ArgumentReader
    target_kind: TargetKind = "path"
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


@dataclass(frozen=True, kw_only=True)
class ToolDeclaration(ToolFacts, ToolSpec):
    """One tool's facts with its input schema: what the model sees of it,
    and what the host knows besides (a built-in's or an MCP server's)."""

    @classmethod
    def of(cls, facts: ToolFacts, input_schema: dict[str, Any]) -> ToolDeclaration:
        """``facts`` with the schema the model sees."""
        known = {field.name: getattr(facts, field.name) for field in fields(ToolFacts)}
        return cls(input_schema=input_schema, **known)


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


def _the_cwd(arguments: Any) -> str:
    return "."  # a glob searches the whole working directory


# The built-in tools, one entry each; ``oma_host.llm.tools`` implements each
# (its params model makes the schema) with one module of the same name.
FILE_READ = ToolFacts(
    name="file_read",
    description="Read a text file under the working directory.",
    effect="read",
    target=first_string("path"),
    location=path_argument("path", "."),
)
GREP = ToolFacts(
    name="grep",
    description="Search files under the working directory for a regular expression "
    "(RE2 syntax: no backreferences or lookaround); answers path:line: text.",
    effect="read",
    search=True,
    target=path_argument("path", "."),
    location=path_argument("path", "."),
)
GLOB = ToolFacts(
    name="glob",
    description="List paths under the working directory matching a glob such as **/*.py.",
    effect="read",
    search=True,
    target=first_string("pattern"),
    target_kind="text",
    location=_the_cwd,
)
FILE_WRITE = ToolFacts(
    name="file_write",
    description="Create a file under the working directory, or replace all of its text.",
    effect="write",
    target=first_string("path"),
    location=path_argument("path"),
    change=string_fields(None, "content"),
)
FILE_EDIT = ToolFacts(
    name="file_edit",
    description="Replace one exact occurrence of old with new in a file under the working "
    "directory; old must occur exactly once (include surrounding lines to make it so).",
    effect="write",
    target=first_string("path"),
    location=path_argument("path"),
    change=string_fields("old", "new"),
)
SHELL = ToolFacts(
    name="shell",
    description="Run a shell command line (/bin/sh -c) in the working directory and read its "
    "output (stdout and stderr) and exit code. No input is given to it. Use it to run tests, "
    "builds, git and other command-line tools.",
    effect="execute",
    target=first_string("command"),
    target_kind="command",
    bounded=True,
)
UPDATE_PLAN = ToolFacts(
    name="update_plan",
    description="Keep a plan for a task of several steps: send the whole plan each time a step "
    "starts or finishes, marking each step pending, in_progress or completed.",
    effect="read",
    target=first_string("entries"),
    target_kind="text",
    think=True,
)
DELEGATE = ToolFacts(
    name="delegate",
    description="Hand a task to another agent and get its answer back as this tool's result. "
    "The agent starts fresh: give it the whole task in `task`.",
    effect="execute",
    target=first_string("agent"),
    target_kind="text",
)
BUILTIN_FACTS: dict[str, ToolFacts] = {
    facts.name: facts
    for facts in (FILE_READ, GREP, GLOB, FILE_WRITE, FILE_EDIT, SHELL, UPDATE_PLAN, DELEGATE)
}


def builtin_tool(name: str) -> ToolFacts | None:
    """The built-in tool called ``name``, or None (an MCP tool, a wrapped
    agent's own tool, a name the model made up)."""
    return BUILTIN_FACTS.get(name)
