"""The permission policy for an LLM agent's tools (``config.permissions``).

The first rule matching the tool and its target (:class:`Target`) decides; with
none, a read is allowed and anything else asks. An ``allow`` pattern matches
the file a path resolves to, a ``deny`` or ``ask`` pattern any form of it, so a
rule keeping a file out cannot be talked around. A command line is decided per
simple command and takes its strictest part. :func:`protected` places
(``.git``, ``.oma``, the host's config) are always asked about. In ``auto``
mode a ``shell`` command the sandbox confines runs unasked, and one asked to
run outside it (``unsandboxed``) is asked about every time. docs/tools.md,
"Permissions".
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from oma_host.core.backends import PermissionHandler
from oma_host.core.config import PermissionMode, PermissionRule, SandboxMode
from oma_host.core.events import PermissionAction
from oma_host.core.places import own_config
from oma_host.core.tools import EFFECT_KINDS, SHELL, ToolDeclaration, ToolFacts, first_string
from oma_host.workspace.command_line import split_command
from oma_host.workspace.confined import (
    Root,
    Stop,
    TimeUp,
    ToolError,
    open_beneath,
    resolve_beneath,
    root_of,
    walk,
)
from oma_host.workspace.sandbox import unavailable

# The main argument of a tool that names none (an MCP server's): the first
# string among ``path``, ``command``, ``file``, ``filename``, ``uri``, ``url``,
# ``pattern``.
target_of = first_string("path", "command", "file", "filename", "uri", "url", "pattern")


def undeclared_tool(name: str, description: str, input_schema: dict[str, Any]) -> ToolDeclaration:
    """The declaration of a tool the host knows only by its listing (an MCP
    server's): the effect ``other``, which asks by default, and the main
    argument :func:`target_of` finds."""
    return ToolDeclaration(
        name=name,
        description=description,
        input_schema=input_schema,
        effect="other",
        target=target_of,
        target_kind="unknown",
    )


# The strings of an MCP call read as paths at the most (a call of thousands is
# matched on these and asks, as one whose targets cannot be found does).
_MAX_STRINGS = 256
# The folders an MCP call names are looked into for what a deny or ask rule
# covers: this many entries at most, for this long at most, all folders of
# the call together. A folder holding more is taken to hold such a file.
_MAX_BENEATH = 10_000
_BENEATH_BUDGET_S = 2.0
# Folder names no tool but a read reaches unasked, wherever they are on the
# way (compared ignoring case, as a case-insensitive file system would).
PROTECTED_NAMES = frozenset({".git", ".oma"})
# Where a pattern's fixed beginning ends.
_WILDCARD = re.compile(r"[*?\[]")
# The tool whose rules keep a file's text from a search that reads it.
READ_TOOL = "file_read"


@dataclass(frozen=True)
class Target:
    """A call's target as rules match it (see the module docstring):
    ``names``, the names of the one file it certainly targets, any of which
    an ``allow`` rule's pattern may match (None: no allow rule with a pattern
    applies), and ``possible``, the forms any of which makes a ``deny`` or
    ``ask`` rule's pattern match. ``resolved``: the
    path's file, relative to ``cwd``, when the target is a path inside it
    (absolute, when inside an additional directory);
    ``parts``: a command line's simple commands."""

    shown: str | None
    names: tuple[str, ...] | None
    possible: tuple[str, ...]
    resolved: str | None = None
    # A command line's simple commands, each decided as a target of its own.
    parts: tuple[Target, ...] | None = None
    # A command line's part whose command cannot be known: it possibly
    # matches every deny or ask rule with a pattern.
    unknown: bool = False
    # The forms of what may be a folder (an MCP call's arguments): a deny or
    # ask rule applies when one holds what its pattern covers.
    folders: tuple[str, ...] = ()
    # A folder too large to look through: every deny or ask rule applies.
    unsearched: bool = False
    # It reaches a place only the user may let a change reach (:func:`protected`).
    protected: bool = False


def _folded(path: str, root: str) -> str:
    """``path`` with ``..`` and ``.`` folded, relative to ``root`` when inside it."""
    normal = os.path.normpath(os.path.join(root, path))
    if normal == root:
        return "."
    inside = normal.startswith(root.rstrip("/") + "/")
    return normal[len(root.rstrip("/")) + 1 :] if inside else normal


def _path_forms(path: str, root: Root) -> tuple[str | None, tuple[str, ...]]:
    """(the file ``path`` names, relative to the root, or None outside it;
    every form of it a deny rule looks at)."""
    if "\0" in path:  # no file has such a name; the tools refuse it
        return None, (path,)
    resolved = resolve_beneath(root, path)
    forms = [path, _folded(path, root.path)]
    if resolved is not None:
        forms += [resolved or ".", _absolute(root, resolved)]
    return resolved, tuple(dict.fromkeys(forms))


def _absolute(root: Root, resolved: str) -> str:
    return os.path.join(root.path, resolved) if resolved else root.path


def _strings(value: Any) -> Iterator[str]:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _as_paths(text: str) -> tuple[str, ...]:
    """``text``, and for a ``file:`` URI the path it names too, as written
    and percent-decoded (whatever host it names: a server may ignore it)."""
    if text[:5].lower() != "file:":
        return (text,)
    path = urlsplit(text).path
    return tuple(dict.fromkeys(form for form in (text, path, unquote(path)) if form))


def protected(root: str, resolved: str | None, path: str) -> bool:
    """Whether ``path`` (resolved to ``resolved`` beneath ``root``, None
    outside it) goes through a ``.git`` or ``.oma`` folder, or into the
    host's own configuration (see the module docstring). Beneath ``root``,
    only the part below it is looked at for the folder names."""
    if resolved is not None:
        absolute, below = os.path.join(root, resolved), resolved
    else:
        absolute = os.path.normpath(os.path.join(root, path))
        if os.path.isabs(path) and "\0" not in path:
            absolute = os.path.realpath(absolute)
        below = absolute
    if any(name.lower() in PROTECTED_NAMES for name in below.split("/")):
        return True
    inside = (absolute == own or absolute.startswith(own.rstrip("/") + "/") for own in own_config())
    return any(inside)


def _holds(folder: str, pattern: str) -> bool:
    """Whether ``folder`` (a form of a path) holds what ``pattern`` names by
    its fixed beginning, the part before its first wildcard: ``secrets``,
    ``.`` and the absolute root hold ``secrets/*``; ``*/secrets/*`` says
    nothing by its beginning."""
    found = _WILDCARD.search(pattern)
    fixed = pattern[: found.start()] if found else pattern
    fixed_folder = fixed[: fixed.rfind("/") + 1]
    if not fixed_folder:
        return False
    if folder == ".":
        return not fixed_folder.startswith(("/", "../"))
    return fixed_folder.startswith(folder if folder.endswith("/") else folder + "/")


class _Beneath:
    """What lies beneath the folders an MCP call names, looked through
    within one bound for the call (``_MAX_BENEATH``, ``_BENEATH_BUDGET_S``);
    ``complete`` turns False when a folder holds more."""

    def __init__(self, root: Root) -> None:
        self.root = root
        self.left = _MAX_BENEATH
        self.stop = Stop(_BENEATH_BUDGET_S)
        self.complete = True
        self.seen: set[str] = set()

    def forms(self, resolved: str) -> Iterator[str]:
        """The forms of every file and folder beneath ``resolved``, if it is
        a folder: as walked and as resolved, relative and absolute. Symlinked
        folders are walked into, as a server following them would."""
        if resolved in self.seen or not self.complete:
            return
        self.seen.add(resolved)
        try:
            fd, start = open_beneath(self.root, resolved or ".", "path")
        except ToolError:
            return
        try:
            if not stat.S_ISDIR(os.fstat(fd).st_mode):
                return
            for entry in walk(self.root, fd, start, True, self.stop, lambda entry: True):
                self.left -= 1
                if self.left < 0:
                    self.complete = False
                    return
                for form in dict.fromkeys((entry.path, entry.resolved)):
                    yield form
                    yield _absolute(self.root, form)
        except TimeUp:
            self.complete = False
        finally:
            os.close(fd)


def find_target(
    declaration: ToolFacts,
    arguments: Any,
    root: Root,
    *,
    look_beneath: bool = False,
    cwd: str | None = None,
) -> Target:
    """How ``declaration``'s call of ``arguments`` is matched (filesystem
    reads: a worker's). ``look_beneath``: an MCP call's folders are looked
    through for what a deny or ask rule may cover (:class:`_Beneath`).
    ``cwd``: the agent's, when ``root`` is another of its folders (an
    additional directory holding the call's path): the file is then named by
    its absolute path only (:func:`named`), which is what rules match."""
    shown = declaration.target(arguments)
    if declaration.target_kind == "command":
        return command_target(shown)
    if declaration.target_kind == "text":
        return Target(shown, None if shown is None else (shown,), () if shown is None else (shown,))
    if declaration.target_kind == "path":
        if shown is None:
            return Target(None, None, ())
        resolved, forms = _path_forms(shown, root)
        guarded = protected(root.path, resolved, shown)
        if resolved is None:
            return Target(shown, None, forms, None, protected=guarded)
        if cwd is not None and cwd != root.path:
            absolute = _absolute(root, resolved)
            forms = tuple(form for form in forms if form.startswith("/"))
            return Target(shown, (absolute,), forms, absolute, protected=guarded)
        names = (resolved or ".", _absolute(root, resolved))
        return Target(shown, names, forms, resolved, protected=guarded)
    given: list[str] = []  # the arguments' forms
    found: list[str] = []  # what lies beneath those that are folders
    guarded = False
    beneath = _Beneath(root) if look_beneath else None
    for index, text in enumerate(_strings(arguments)):
        if index == _MAX_STRINGS:
            break
        if not text:
            given.append(text)
            continue
        for path in _as_paths(text):
            resolved, forms = _path_forms(path, root)
            given.extend(forms)
            guarded = guarded or protected(root.path, resolved, path)
            if beneath is not None and resolved is not None:
                found.extend(beneath.forms(resolved))
    return Target(
        shown,
        None,
        tuple(dict.fromkeys(given + found)),
        folders=tuple(dict.fromkeys(form for form in given if form)),
        unsearched=beneath is not None and not beneath.complete,
        protected=guarded,
    )


def command_target(line: str | None) -> Target:
    """A command line as rules match it: a target per simple command, which
    an ``allow`` rule's pattern may match only when the split is certain."""
    if line is None:
        return Target(None, None, ())
    split = split_command(line)
    parts = tuple(
        Target(
            command.text,
            (command.text,) if split.certain else None,
            tuple(dict.fromkeys((command.text, *command.forms, line))),
            unknown=command.unknown is not None,
        )
        for command in split.commands
    )
    return Target(line, None, (line,), parts=parts)


@dataclass(frozen=True)
class Verdict:
    """What the policy says before anyone is asked: the action, and the rule
    (its index), the mode or the default that said it."""

    action: PermissionAction
    rule: int | None  # None: the mode or a default
    # "protected": a place the rules and the mode cannot let a change reach unasked.
    by: Literal["rule", "mode", "default", "protected"] = "rule"


def default_action(tool: ToolFacts) -> PermissionAction:
    """What a call no rule matches gets: reading is allowed, the rest asks."""
    return "allow" if tool.effect == "read" else "ask"


def _applies(rule: PermissionRule, target: Target) -> bool:
    pattern = rule.pattern
    if pattern is None:
        return True
    if rule.action == "allow":
        return any(fnmatch.fnmatchcase(name, pattern) for name in target.names or ())
    return (
        target.unsearched
        or any(fnmatch.fnmatchcase(form, pattern) for form in target.possible)
        or any(_holds(folder, pattern) for folder in target.folders)
    )


def _guarded(tool: ToolFacts, target: Target) -> bool:
    """Whether the call must be asked about, whatever allows it (:func:`protected`)."""
    return target.protected and tool.effect != "read"


# The strictness of each action, for a command line's parts.
_STRICTNESS: dict[PermissionAction, int] = {"allow": 0, "ask": 1, "deny": 2}


def evaluate(
    rules: list[PermissionRule],
    tool: ToolFacts,
    target: Target,
    mode: PermissionMode = "ask",
    *,
    sandboxed: bool = False,
) -> Verdict:
    """In ``read-only`` mode, anything but a read is denied before the rules;
    otherwise the first matching rule's action, else in ``accept-edits``
    and ``auto`` modes a write is allowed, and in ``auto`` mode a command
    that runs ``sandboxed`` too, else the default; but a change reaching a
    protected place asks where it would be allowed. A command line's verdict
    is the strictest of its parts' (the first part's among equals)."""
    if mode == "read-only" and tool.effect != "read":
        return Verdict("deny", None, "mode")
    if target.parts is not None:
        verdicts = [evaluate(rules, tool, part, mode, sandboxed=sandboxed) for part in target.parts]
        return max(verdicts, key=lambda verdict: _STRICTNESS[verdict.action])
    verdict = Verdict(default_action(tool), None, "default")
    for index, rule in enumerate(rules):
        if not fnmatch.fnmatchcase(tool.name, rule.tool):
            continue
        if _applies(rule, target):
            verdict = Verdict(rule.action, index)
            break
        if target.unknown and rule.pattern is not None and rule.action != "allow":
            verdict = Verdict("ask", index)  # it may be what the rule keeps out
            break
    else:
        edit = mode in ("accept-edits", "auto") and tool.effect == "write"
        if edit or (mode == "auto" and sandboxed and tool.effect == "execute"):
            verdict = Verdict("allow", None, "mode")
    if verdict.action == "allow" and _guarded(tool, target):
        return Verdict("ask", None, "protected")
    return verdict


class SearchRules:
    """What a search (``grep``, ``glob``) leaves out of the files and
    folders its walk meets: each is decided as a call of the search's tool
    on it would be by the rules with a pattern (the first that applies), and
    for a search that reads the files' text as a ``file_read`` of it too;
    a ``deny`` or ``ask`` is left out. A rule without a pattern decided the
    call itself. Matched as any path is: the path as walked and the file it
    leads to, relative to ``cwd`` and absolute."""

    def __init__(self, rules: list[PermissionRule], tool: str, root: str) -> None:
        def naming(name: str) -> tuple[PermissionRule, ...]:
            return tuple(
                rule
                for rule in rules
                if rule.pattern is not None and fnmatch.fnmatchcase(name, rule.tool)
            )

        self._own = naming(tool)
        self._read = naming(READ_TOOL)
        self._root = root

    def hides(self, path: str, resolved: str, *, reads: bool, root: str | None = None) -> bool:
        """Whether the walk must leave out ``path`` (leading to ``resolved``),
        both beneath the folder ``root`` (``cwd`` by default; in an
        additional directory only the absolute forms are matched)."""
        rules = (self._own, self._read) if reads else (self._own,)
        if not any(rules):
            return False
        base = root or self._root
        absolute = (
            os.path.join(base, path) if path else base,
            os.path.join(base, resolved) if resolved else base,
        )
        if base == self._root:
            names = (resolved or ".", absolute[1])
            target = Target(path, names, tuple(dict.fromkeys((path, resolved, *absolute))))
        else:
            target = Target(path, absolute[1:], tuple(dict.fromkeys(absolute)))
        for some in rules:
            found = next((rule for rule in some if _applies(rule, target)), None)
            if found is not None and found.action != "allow":
                return True
        return False


@dataclass(frozen=True)
class Decision:
    """Whether the call may run, and why (the ``permission`` event's data)."""

    allowed: bool
    event: dict[str, Any]
    # The file decided for, when the target is a path: relative to ``cwd``,
    # absolute in an additional directory (confined.named).
    resolved: str | None = None


class PermissionPolicy:
    """One agent's rules, its session grants and the client to ask."""

    def __init__(
        self,
        rules: list[PermissionRule] | None,
        handler: PermissionHandler | None,
        agent_name: str,
        timeout_s: float,
        root: str,
        mode: PermissionMode = "ask",
        folders: tuple[str, ...] = (),
        sandbox: SandboxMode = "off",
    ) -> None:
        self._rules = list(rules or [])
        self._mode = mode
        # The sandbox the shell's commands run in (sandbox.chosen_sandbox).
        self._sandbox = sandbox
        self._root = root
        # The additional directories (absolute, resolved), confined as ``root`` is.
        self._folders = folders
        self._handler = handler
        self._agent_name = agent_name
        self._timeout_s = timeout_s
        # (tool, rule, what it covers: the file or command line, None for
        # any call of the tool) allowed for the session.
        self._granted: set[tuple[str, int | None, str | None]] = set()

    def search_rules(self, tool: str) -> SearchRules:
        """What the search ``tool``'s walk leaves out."""
        return SearchRules(self._rules, tool, self._root)

    async def decide(
        self, declaration: ToolFacts, arguments: Any, *, run_id: str, tool_use_id: str
    ) -> Decision:
        found = await asyncio.to_thread(self._find_target, declaration, arguments)
        sandboxed = False
        if declaration.name == SHELL.name and self._sandbox != "off":
            roots = (self._root, *self._folders)
            sandboxed = await asyncio.to_thread(unavailable, self._sandbox, roots) is None
        decision = await self._decide(
            declaration, arguments, found, run_id, tool_use_id, sandboxed=sandboxed
        )
        return Decision(decision.allowed, decision.event, found.resolved)

    def _find_target(self, declaration: ToolFacts, arguments: Any) -> Target:
        if declaration.target_kind == "command":  # no file to resolve
            return command_target(declaration.target(arguments))
        look_beneath = declaration.target_kind == "unknown" and self._names_a_pattern(
            declaration.name
        )
        # A path's call is matched in the folder it is confined to (root_of).
        shown = declaration.target(arguments) if declaration.target_kind == "path" else None
        folder = root_of(shown or ".", (self._root, *self._folders))
        try:
            with Root(folder) as root:
                return find_target(
                    declaration, arguments, root, look_beneath=look_beneath, cwd=self._root
                )
        except OSError:  # no cwd to resolve in (the tools will say so): nothing is certain
            shown = declaration.target(arguments)
            return Target(shown, None, () if shown is None else (shown,))

    def _names_a_pattern(self, tool: str) -> bool:
        """Whether a deny or ask rule with a pattern names ``tool`` (then
        the folders its call names are looked through)."""
        return any(
            rule.action != "allow"
            and rule.pattern is not None
            and fnmatch.fnmatchcase(tool, rule.tool)
            for rule in self._rules
        )

    async def _decide(
        self,
        declaration: ToolFacts,
        arguments: Any,
        found: Target,
        run_id: str,
        tool_use_id: str,
        *,
        sandboxed: bool,
    ) -> Decision:
        tool, target = declaration.name, found.shown
        # A command that would run in the sandbox, asked to run outside it:
        # the rules may refuse it, nothing lets it run unasked.
        outside = sandboxed and isinstance(arguments, dict) and arguments.get("unsandboxed") is True
        verdict = evaluate(
            self._rules, declaration, found, self._mode, sandboxed=sandboxed and not outside
        )
        if outside and verdict.action == "allow":
            verdict = Verdict("ask", verdict.rule, verdict.by)
        event: dict[str, Any] = {"toolUseId": tool_use_id, "tool": tool, "action": verdict.action}
        if target is not None:
            event["target"] = target
        event["rule"] = verdict.rule
        if verdict.action != "ask":
            event.update(decision=verdict.action, by=verdict.by)
            return Decision(verdict.action == "allow", event)
        grant = (tool, verdict.rule, _covered(declaration, found))
        # A protected place, and a command outside the sandbox, are asked
        # about every time.
        guarded = _guarded(declaration, found) or outside
        if grant in self._granted and not guarded:
            event.update(decision="allow", by="session")
            return Decision(True, event)
        if self._handler is None:
            event.update(decision="deny", by="no_client")
            return Decision(False, event)
        request: dict[str, Any] = {
            "agentName": self._agent_name,
            "runId": run_id,
            "title": _title(tool, target, outside),
            # A call that changes something says how (ACP's edit or execute).
            "kind": EFFECT_KINDS[declaration.effect]
            if declaration.effect in ("write", "execute")
            else None,
            # No "always" where the approval is not kept.
            "optionKinds": ["allow_once", "reject_once"]
            if guarded
            else ["allow_once", "allow_always", "reject_once"],
            "source": "tool",
            "tool": {
                "name": tool,
                "input": arguments if isinstance(arguments, dict) else {},
                "toolUseId": tool_use_id,
            },
        }
        if target is not None:
            request["tool"]["target"] = target
        try:
            answer = await asyncio.wait_for(self._handler(request), self._timeout_s)
        except TimeoutError:
            event.update(decision="deny", by="timeout")
            return Decision(False, event)
        except Exception as error:  # the client answered an error, or is gone
            event.update(decision="deny", by="client_error", message=str(error)[:300])
            return Decision(False, event)
        approved, scope = _read_answer(answer)
        if approved is None:
            event.update(decision="deny", by="bad_answer")
            return Decision(False, event)
        event.update(decision="allow" if approved else "deny", by="client")
        if approved:
            event["scope"] = "once" if guarded else scope
            if scope == "session" and not guarded:
                self._granted.add(grant)
        return Decision(approved, event)


def _title(tool: str, target: str | None, outside: bool) -> str:
    """What the user is asked about: the tool and its target; a command to
    run outside the sandbox says so before the exact line."""
    if outside:
        return f"{tool} outside the sandbox: {target}"
    return f"{tool} {target}" if target else tool


def _covered(declaration: ToolFacts, found: Target) -> str | None:
    """What a session grant of the call covers besides its tool and rule: a
    command line's grant is for that line, a path's for that file (the next
    may be a git hook); None: any call of the tool."""
    if found.parts is not None:
        return found.shown
    if declaration.target_kind == "path":
        return found.resolved if found.resolved is not None else found.shown
    return None


def confirm_approved(path: str, resolved: str, approved: str | None) -> None:
    """Refuse a call whose file (``resolved``, relative to ``cwd``, as the
    tool resolved ``path`` to carry it out) is no longer ``approved``, the
    one the policy decided for: a name swapped for a symlink since."""
    if approved is not None and resolved != approved:
        raise ToolError(
            f"{path} now leads to {resolved or '.'}, not to {approved or '.'}, the file the "
            "permission was given for; nothing was done"
        )


def _read_answer(answer: Any) -> tuple[bool | None, str]:
    """``{approve: bool, scope?: "once" | "session"}`` as (approve, scope);
    (None, ...) for anything else."""
    if not isinstance(answer, dict) or not isinstance(answer.get("approve"), bool):
        return None, "once"
    scope = answer.get("scope", "once")
    if scope not in ("once", "session"):
        return None, "once"
    return answer["approve"], scope
