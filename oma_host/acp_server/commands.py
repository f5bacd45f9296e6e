"""Slash commands of the ACP door: the host's own (``/compact``, ``/clear``,
``/agent``, ``/model``, ``/cost``), carried out by the door without a turn
(``/compact`` asks the agent's model for a summary, as a compaction does),
and the user's prompt templates, expanded into the prompt.

A user command is a Markdown file named for the command, in
``<cwd>/.oma/commands/`` or ``$XDG_CONFIG_HOME/oma-host/commands/`` (the
project's wins over the user's of the same name; neither may take a built-in
name). Its first line may give its description (``description: ...``, or a
``---`` front matter holding that line); the rest is the template, where
``$ARGUMENTS`` stands for what follows the command (appended after a blank
line when the template does not say where, so nothing typed is dropped).
Commands are sent to the editor as ``available_commands_update`` when a
session opens.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oma_host.core.places import config_dir
from oma_host.core.results import TokenUsage

if TYPE_CHECKING:
    from oma_host.core.events import Compaction

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]*")
# The largest command file read (a template, not a document).
MAX_TEMPLATE_BYTES = 256 * 1024


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
    )
}


def _parsed(path: Path) -> Command | None:
    name = path.stem
    if not _NAME.fullmatch(name) or name in BUILTINS:
        if name in BUILTINS:
            log.warning("command file %s is ignored: /%s is a built-in command", path, name)
        return None
    try:
        if path.stat().st_size > MAX_TEMPLATE_BYTES:
            log.warning("command file %s is ignored: over %d bytes", path, MAX_TEMPLATE_BYTES)
            return None
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        log.warning("command file %s cannot be read: %s", path, error)
        return None
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
    return Command(name, description, "arguments" if "$ARGUMENTS" in template else None, template)


def user_commands(cwd: str) -> dict[str, Command]:
    """The user's commands for a session in ``cwd``, the project's first."""
    commands: dict[str, Command] = {}
    for folder in (Path(cwd) / ".oma" / "commands", Path(config_dir()) / "commands"):
        try:
            paths = sorted(folder.glob("*.md"))
        except OSError:
            continue
        for path in paths:
            if path.stem not in commands and (command := _parsed(path)) is not None:
                commands[command.name] = command
    return commands


def available(cwd: str) -> list[dict[str, Any]]:
    """Every command a session in ``cwd`` offers (wire form), built-ins first."""
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
