"""Slash commands of the ACP door: the host's own and the user's prompt templates.

The host's (``/compact``, ``/clear``, ``/agent``, ``/model``, ``/cost``, ``/rewind``) run
without a turn; a user command is a Markdown template in
``<cwd>/.oma/commands/`` or the user's config folder, expanded into the prompt.
A repository is untrusted: its folders must be real directories and a command
file is opened with the confined opener, regular files only and bounded, in a
worker thread. docs/acp.md, "What it serves".
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oma_host.core.history import Rewound, turn_starts
from oma_host.core.messages import LLMMessage
from oma_host.core.places import FolderError, config_dir, private_folder
from oma_host.core.results import TokenUsage
from oma_host.workspace.confined import Root, ToolError, open_beneath, read_at_most

if TYPE_CHECKING:
    from oma_host.core.events import Compaction

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
# The largest command file read (a template, not a document).
MAX_TEMPLATE_BYTES = 256 * 1024
# The most command files read from one folder, in name order.
MAX_COMMANDS = 200
# A folder on the way to the project's commands: never through a link.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# The user's own command file: links followed; O_NONBLOCK: a FIFO does not
# wait for a writer; O_NOCTTY: a terminal does not become the host's.
_USER_FILE = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


@dataclass(frozen=True)
class Command:
    name: str
    description: str
    hint: str | None = None  # what the command takes after its name, if anything
    template: str | None = None  # None: one of the host's own

    def wire(self) -> dict[str, Any]:
        """The ACP ``AvailableCommand``."""
        command: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.hint is not None:
            command["input"] = {"hint": self.hint}
        return command


BUILTINS = {
    command.name: command
    for command in (
        Command(
            "compact",
            "Summarise the conversation so far into one message, keeping the last turn, "
            "to free the model's context window",
        ),
        Command("clear", "Start the conversation afresh; the session keeps its settings"),
        Command("agent", "Switch to another agent of the agents file", "agent name"),
        Command("model", "Switch the model for the next turns", "model"),
        Command("cost", "Show the tokens and the cost of this session"),
        Command(
            "rewind",
            "List the recent messages; with a number, go back to before that message, "
            "restoring the files the agent changed since (add keep-files to leave them)",
            "message number",
        ),
    )
}
# The recent messages /rewind lists.
REWIND_LISTED = 20
# What /rewind takes after the number to leave the files as they are.
KEEP_FILES = "keep-files"


class _Refused(Exception):
    """Why a command file is skipped."""


def _template_text(fd: int) -> str:
    """The text of the command file open on ``fd``: a regular file of at
    most MAX_TEMPLATE_BYTES of UTF-8, read no further than one byte past."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise _Refused("it is not a regular file")
    data = read_at_most(fd, MAX_TEMPLATE_BYTES + 1)
    if len(data) > MAX_TEMPLATE_BYTES:
        raise _Refused(f"it is over {MAX_TEMPLATE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused("it is not UTF-8 text") from None


def _parsed(name: str, text: str, path: str, origin: str) -> Command:
    lines = text.splitlines()
    description = f"a prompt from {path}"
    if lines and lines[0].strip() == "---" and "---" in (line.strip() for line in lines[1:]):
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        for line in lines[1:end]:
            if line.lower().startswith("description:"):
                description = line.split(":", 1)[1].strip() or description
        lines = lines[end + 1 :]
    elif lines and lines[0].lower().startswith("description:"):
        description = lines[0].split(":", 1)[1].strip() or description
        lines = lines[1:]
    template = "\n".join(lines).strip("\n")
    hint = "arguments" if "$ARGUMENTS" in template else None
    return Command(name, f"{description} ({origin})", hint, template)


class _Folder:
    """One folder of command files, open for the reading of a few."""

    def __init__(self, root: Root, origin: str, confined: bool) -> None:
        self.root = root
        self.origin = origin  # "project" or "user"
        self.confined = confined  # opened beneath the folder, or links followed

    def names(self) -> list[str]:
        """The commands' names, in order, as many as are read."""
        try:
            files = sorted(os.listdir(self.root.fd))
        except OSError as error:
            log.warning("the commands in %s are not read: %s", self.root.path, error.strerror)
            return []
        names = [file[:-3] for file in files if file.endswith(".md")]
        if len(names) > MAX_COMMANDS:
            log.warning(
                "%s holds %d command files: the first %d are read",
                self.root.path,
                len(names),
                MAX_COMMANDS,
            )
        return names[:MAX_COMMANDS]

    def command(self, name: str) -> Command | None:
        """The command ``name`` of this folder; None (and why, logged when
        its file is there) when it has none."""
        path = os.path.join(self.root.path, f"{name}.md")
        if not _NAME.fullmatch(name):
            return None
        if name.lower() in BUILTINS:
            builtin = name.lower()
            log.warning("%s is ignored: /%s would pass for the built-in /%s", path, name, builtin)
            return None
        try:
            if self.confined:
                fd, _ = open_beneath(self.root, f"{name}.md", "command file")
            else:
                fd = os.open(f"{name}.md", _USER_FILE, dir_fd=self.root.fd)
        except FileNotFoundError:
            return None
        except ToolError as error:
            if error.code != errno.ENOENT:
                log.warning("%s is ignored: %s", path, error)
            return None
        except OSError as error:
            log.warning("%s is ignored: %s", path, error.strerror)
            return None
        try:
            text = _template_text(fd)
        except _Refused as error:
            log.warning("%s is ignored: %s", path, error)
            return None
        except OSError as error:
            log.warning("%s is ignored: %s", path, error.strerror)
            return None
        finally:
            os.close(fd)
        return _parsed(name, text, path, self.origin)


def _project_folder(cwd: str) -> _Folder | None:
    """``<cwd>/.oma/commands``, each step opened without following a link;
    None when there is none."""
    real = os.path.realpath(cwd)
    where = os.path.join(real, ".oma", "commands")
    try:
        fd = os.open(real, _FOLDER)
    except OSError:
        return None  # the session's cwd is gone: nothing to offer
    try:
        for step in (".oma", "commands"):
            inner = os.open(step, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
    except FileNotFoundError:
        os.close(fd)
        return None
    except OSError as error:
        os.close(fd)
        why = (
            "it is a symbolic link or no folder"
            if error.errno in (errno.ELOOP, errno.ENOTDIR)
            else error.strerror
        )
        log.warning("the project's commands in %s are not read: %s", where, why)
        return None
    return _Folder(Root(where, fd=fd, inside=where), "project", confined=True)


def _user_folder() -> _Folder | None:
    """``$XDG_CONFIG_HOME/oma-host/commands``, in a config folder of the
    user's own; None when there is none."""
    where = os.path.join(config_dir(), "commands")
    try:
        private_folder(os.path.dirname(where))
        fd = os.open(where, _FOLDER & ~os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except FolderError as error:
        log.warning("the user's commands are not read: %s", error)
        return None
    except OSError as error:
        log.warning("the user's commands in %s are not read: %s", where, error.strerror)
        return None
    return _Folder(Root(where, fd=fd, inside=where), "user", confined=False)


@contextmanager
def _folders(cwd: str) -> Iterator[list[_Folder]]:
    """The command folders of a session in ``cwd``, the project's first,
    open while the caller reads them."""
    folders = [f for f in (_project_folder(cwd), _user_folder()) if f is not None]
    try:
        yield folders
    finally:
        for folder in folders:
            os.close(folder.root.fd)


def user_commands(cwd: str) -> dict[str, Command]:
    """The user's commands for a session in ``cwd``, the project's first.
    Reads files: call it in a worker thread."""
    commands: dict[str, Command] = {}
    with _folders(cwd) as folders:
        for folder in folders:
            for name in folder.names():
                if name not in commands and (command := folder.command(name)) is not None:
                    commands[name] = command
    return commands


def user_command(cwd: str, name: str) -> Command | None:
    """The user's command ``name`` for a session in ``cwd`` (the project's
    first), or None. Reads files: call it in a worker thread."""
    with _folders(cwd) as folders:
        return next(filter(None, (folder.command(name) for folder in folders)), None)


def available(cwd: str) -> list[dict[str, Any]]:
    """Every command a session in ``cwd`` offers (wire form), built-ins
    first. Reads files: call it in a worker thread."""
    return [command.wire() for command in (*BUILTINS.values(), *user_commands(cwd).values())]


def invocation(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` when ``text`` starts with ``/name`` followed by
    white space or nothing (``/etc/hosts`` is a path, not a command)."""
    if not text.startswith("/"):
        return None
    match = _NAME.match(text, 1)
    if match is None or (match.end() < len(text) and not text[match.end()].isspace()):
        return None
    return match.group(), text[match.end() :].strip()


def expanded(command: Command, arguments: str) -> str:
    """A user command's prompt: its template with ``$ARGUMENTS`` filled."""
    template = command.template or ""
    if "$ARGUMENTS" in template:
        return template.replace("$ARGUMENTS", arguments)
    return f"{template}\n\n{arguments}" if arguments else template


def usage_report(tokens: TokenUsage, cost: float | None) -> str:
    """``/cost``'s answer: the session's tokens and, when known, its cost."""
    parts = [f"{tokens['input_tokens']:,} input", f"{tokens['output_tokens']:,} output"]
    cached = tokens.get("cache_read_input_tokens", 0)
    written = tokens.get("cache_creation_input_tokens", 0)
    if cached:
        parts.append(f"{cached:,} read from the cache")
    if written:
        parts.append(f"{written:,} written to the cache")
    spent = "cost unknown (no prices for this model)" if cost is None else f"${cost:.4f}"
    return f"This session: {', '.join(parts)} tokens; {spent}."


def compaction_note(compaction: Compaction) -> str:
    """What a compaction did, in a sentence (its thought chunk, ``/compact``'s answer)."""
    how = (
        "the older turns summarised"
        if compaction["strategy"] == "summarize"
        else f"the {len(compaction.get('dropped', []))} oldest turns dropped"
    )
    note = (
        f"Compacted the conversation to fit the model's context window: "
        f"{compaction['before']} messages to {compaction['after']} (about "
        f"{compaction['tokensBefore']:,} to {compaction['tokensAfter']:,} tokens), {how}."
    )
    if compaction["images"]:
        where = "named in the summary" if compaction["strategy"] == "summarize" else "dropped"
        note += f" Not kept: {len(compaction['images'])} image(s) or file(s), {where}."
    return note


def _said(message: LLMMessage) -> str:
    """A user message's text on one line, cut to 72 characters."""
    words = " ".join(
        " ".join(block["text"].split())
        for block in message["content"]
        if block.get("type") == "text"
    )
    words = words or "(no text)"
    return words if len(words) <= 72 else words[:71] + "…"


def rewind_listing(history: list[LLMMessage], marks: list[str | None]) -> str:
    """``/rewind``'s answer without a number: the recent user messages,
    numbered from the first, and how to go back to before one."""
    starts = turn_starts(history)
    if not starts:
        return "There is no message to rewind to yet."
    lines = []
    first = max(0, len(starts) - REWIND_LISTED)
    for number in range(first, len(starts)):
        at = starts[number]
        kept = "" if at < len(marks) and marks[at] is not None else " (no checkpoint of the files)"
        lines.append(f"{number + 1}. {_said(history[at])}{kept}")
    earlier = f"({first} earlier not shown)\n" if first else ""
    return (
        f"{earlier}" + "\n".join(lines) + "\n\n"
        "/rewind N goes back to before message N: the conversation keeps the messages "
        "before it, and the files the agent changed since are restored; "
        f"/rewind N {KEEP_FILES} leaves the files as they are."
    )


def rewind_arguments(arguments: str, turns: int) -> tuple[int, bool] | str:
    """``/rewind N [keep-files]`` as (turns to keep, restore the files), or
    what is wrong with it."""
    words = arguments.split()
    restore = True
    if len(words) == 2 and words[1].lstrip("-").lower() == KEEP_FILES:
        restore = False
        words = words[:1]
    if len(words) != 1 or not words[0].isdigit() or not 1 <= int(words[0]) <= turns:
        where = f"1 to {turns}" if turns else "none yet"
        return (
            f"/rewind takes a message number ({where}), optionally followed by "
            f"{KEEP_FILES}; {arguments!r} is not one. /rewind alone lists the messages."
        )
    return int(words[0]) - 1, restore


def _shown(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it is inside, else as it is."""
    inside = os.path.relpath(path, cwd)
    return path if inside.startswith("..") else inside


def rewind_note(rewound: Rewound, cwd: str) -> str:
    """What a rewind did, in a few sentences (``/rewind``'s answer)."""
    note = (
        f"Rewound the conversation to before message {rewound.kept_turns + 1}: "
        f"{rewound.kept_turns} turn(s) kept, {rewound.removed_turns} removed."
    )
    files = rewound.files
    if files is None:
        return note + " The files were left as they are."
    parts = [
        ("Files restored", files.restored),
        ("Files removed (created since)", files.removed),
        ("Left as they are (changed outside the agent since its last turn)", files.left_alone),
        ("Not restored (too large to record at the checkpoint)", files.not_recorded),
    ]
    said = [
        f"{what}: {', '.join(_shown(p, cwd) for p in paths)}." for what, paths in parts if paths
    ]
    return " ".join([note, *(said or ["No file had changed since."])])
