"""The permission policy for an LLM agent's tools (``config.permissions``).

Rules are tried in order; the first whose ``tool`` (a name or an fnmatch
glob such as ``fs__*``) matches the tool's name and whose ``pattern``, if it
has one, matches the call's target (:class:`Target`) decides. When none
matches, the default follows the tool's declared effect: a tool that reads
is allowed, any other (the write tools, every MCP tool) asks. The agent's
``permissionMode`` sets presets around the rules: ``accept-edits`` allows a
write no rule decided, and ``read-only`` refuses anything but a read before
the rules are tried.

A pattern matches the file a path names, not its spelling: the path is
resolved beneath ``cwd`` as the tools would open it (``..`` and ``.``
folded, symlinks inside the tree followed), and an ``allow`` rule applies
only when that file's name matches, relative to ``cwd`` or absolute
(``docs/*`` and ``*/docs/*`` both allow ``docs/new.txt``; neither allows
``docs/../secret.txt``). A ``deny`` or ``ask`` rule applies when any form of
it matches (as written, folded, or resolved): a rule that keeps a file out
must not be talked around. When the targets cannot all be found (an MCP
tool, whose arguments the host cannot read the meaning of), an ``allow``
rule with a pattern never applies, and a ``deny`` or ``ask`` rule with one
applies when any string among the arguments, read as a path, matches. The
file an approval was given for is the one the call may touch
(:meth:`oma_host.llm.tools.base.Workspace.confirm`).

A command line (the ``shell`` tool's target) is decided one simple command
at a time (:func:`oma_host.llm.command_line.split_command`): each part gets
the action of the first rule that applies to it, and the line the strictest
of its parts' (``deny`` over ``ask`` over ``allow``), so ``git status &&
touch pwned`` is allowed only if both commands are. An ``allow`` rule with a
pattern applies to a part when the part matches as written and the split is
certain (no redirect to a file, no command substitution, nothing sh would
refuse: then no such rule applies to any part); a ``deny`` or ``ask`` rule
when the part, one of its normalised forms (quotes removed, a path's
basename, wrappers such as ``env`` or ``xargs`` unwrapped, ``sh -c`` and
``eval`` strings read: :attr:`oma_host.llm.command_line.Command.forms`), or
the whole line matches. A part whose command cannot be known (``eval "$x"``,
a command word ``$x``) possibly matches every ``deny`` or ``ask`` rule with
a pattern: the first such rule makes it ask.

``ask`` goes to the client (``agent/requestPermission`` with ``source:
"tool"``) through the agent's permission handler, for at most
``hooks.timeoutMs``. The answer ``{approve: true, scope: "session"}`` allows
the same tool under the same rule for the rest of the backend's life (the
agent's, until it is reset or disposed) without asking again; for a command
line, the same line only. No handler
(teams, runs without a client), no answer in time, an error or any other
answer denies. Every decision becomes a ``permission`` stream event.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from oma_host.core.backends import PermissionHandler
from oma_host.core.config import PermissionMode, PermissionRule
from oma_host.core.tools import EFFECT_KINDS, ToolDeclaration, first_string
from oma_host.llm.command_line import split_command
from oma_host.llm.confined import Root, ToolError, resolve_beneath

Action = Literal["allow", "ask", "deny"]
# The main argument of a tool that names none (an MCP server's): the first
# string among ``path``, ``command``, ``file``, ``filename``, ``uri``, ``url``,
# ``pattern``.
target_of = first_string("path", "command", "file", "filename", "uri", "url", "pattern")


def undeclared_tool(name: str, description: str, input_schema: dict[str, Any]) -> ToolDeclaration:
    """The declaration of a tool the host knows only by its listing (an MCP
    server's): the effect ``other``, which asks by default, and the main
    argument :func:`target_of` finds."""
    return ToolDeclaration(
        name, description, input_schema, effect="other", target=target_of, target_kind="unknown"
    )


# The strings of an MCP call read as paths at the most (a call of thousands is
# matched on these and asks, as one whose targets cannot be found does).
_MAX_STRINGS = 256


@dataclass(frozen=True)
class Target:
    """A call's target as rules match it (see the module docstring):
    ``names``, the names of the one file it certainly targets, any of which
    an ``allow`` rule's pattern may match (None: no allow rule with a pattern
    applies), and ``possible``, the forms any of which makes a ``deny`` or
    ``ask`` rule's pattern match. ``resolved``: the
    path's file, relative to ``cwd``, when the target is a path inside it;
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


def find_target(declaration: ToolDeclaration, arguments: Any, root: Root) -> Target:
    """How ``declaration``'s call of ``arguments`` is matched (filesystem reads: a worker's)."""
    shown = declaration.target(arguments)
    if declaration.target_kind == "command":
        return command_target(shown)
    if declaration.target_kind == "text":
        return Target(shown, None if shown is None else (shown,), () if shown is None else (shown,))
    if declaration.target_kind == "path":
        if shown is None:
            return Target(None, None, ())
        resolved, forms = _path_forms(shown, root)
        if resolved is None:
            return Target(shown, None, forms, None)
        return Target(shown, (resolved or ".", _absolute(root, resolved)), forms, resolved)
    possible: list[str] = []
    for index, text in enumerate(_strings(arguments)):
        if index == _MAX_STRINGS:
            break
        possible.extend(_path_forms(text, root)[1] if text else (text,))
    return Target(shown, None, tuple(dict.fromkeys(possible)))


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

    action: Action
    rule: int | None  # None: the mode or a default
    by: Literal["rule", "mode", "default"] = "rule"


def default_action(tool: ToolDeclaration) -> Action:
    """What a call no rule matches gets: reading is allowed, the rest asks."""
    return "allow" if tool.effect == "read" else "ask"


def _applies(rule: PermissionRule, target: Target) -> bool:
    pattern = rule.pattern
    if pattern is None:
        return True
    if rule.action == "allow":
        return any(fnmatch.fnmatchcase(name, pattern) for name in target.names or ())
    return any(fnmatch.fnmatchcase(form, pattern) for form in target.possible)


# The strictness of each action, for a command line's parts.
_STRICTNESS: dict[Action, int] = {"allow": 0, "ask": 1, "deny": 2}


def evaluate(
    rules: list[PermissionRule],
    tool: ToolDeclaration,
    target: Target,
    mode: PermissionMode = "ask",
) -> Verdict:
    """In ``read-only`` mode, anything but a read is denied before the rules;
    otherwise the first matching rule's action, else in ``accept-edits``
    mode a write is allowed, else the default. A command line's verdict is
    the strictest of its parts' (the first part's among equals)."""
    if mode == "read-only" and tool.effect != "read":
        return Verdict("deny", None, "mode")
    if target.parts is not None:
        verdicts = [evaluate(rules, tool, part, mode) for part in target.parts]
        return max(verdicts, key=lambda verdict: _STRICTNESS[verdict.action])
    for index, rule in enumerate(rules):
        if not fnmatch.fnmatchcase(tool.name, rule.tool):
            continue
        if _applies(rule, target):
            return Verdict(rule.action, index)
        if target.unknown and rule.pattern is not None and rule.action != "allow":
            return Verdict("ask", index)  # it may be what the rule keeps out
    if mode == "accept-edits" and tool.effect == "write":
        return Verdict("allow", None, "mode")
    return Verdict(default_action(tool), None, "default")


@dataclass(frozen=True)
class Decision:
    """Whether the call may run, and why (the ``permission`` event's data)."""

    allowed: bool
    event: dict[str, Any]
    # The file decided for, relative to ``cwd``, when the target is a path.
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
    ) -> None:
        self._rules = list(rules or [])
        self._mode = mode
        self._root = root
        self._handler = handler
        self._agent_name = agent_name
        self._timeout_s = timeout_s
        # (tool, rule, command line or None) allowed for the session.
        self._granted: set[tuple[str, int | None, str | None]] = set()

    async def decide(
        self, declaration: ToolDeclaration, arguments: Any, *, run_id: str, tool_use_id: str
    ) -> Decision:
        found = await asyncio.to_thread(self._find_target, declaration, arguments)
        decision = await self._decide(declaration, arguments, found, run_id, tool_use_id)
        return Decision(decision.allowed, decision.event, found.resolved)

    def _find_target(self, declaration: ToolDeclaration, arguments: Any) -> Target:
        if declaration.target_kind == "command":  # no file to resolve
            return command_target(declaration.target(arguments))
        try:
            with Root(self._root) as root:
                return find_target(declaration, arguments, root)
        except OSError:  # no cwd to resolve in (the tools will say so): nothing is certain
            shown = declaration.target(arguments)
            return Target(shown, None, () if shown is None else (shown,))

    async def _decide(
        self,
        declaration: ToolDeclaration,
        arguments: Any,
        found: Target,
        run_id: str,
        tool_use_id: str,
    ) -> Decision:
        tool, target = declaration.name, found.shown
        verdict = evaluate(self._rules, declaration, found, self._mode)
        event: dict[str, Any] = {"toolUseId": tool_use_id, "tool": tool, "action": verdict.action}
        if target is not None:
            event["target"] = target
        event["rule"] = verdict.rule
        if verdict.action != "ask":
            event.update(decision=verdict.action, by=verdict.by)
            return Decision(verdict.action == "allow", event)
        # A command line's grant is for that line: the next one may do anything.
        grant = (tool, verdict.rule, target if found.parts is not None else None)
        if grant in self._granted:
            event.update(decision="allow", by="session")
            return Decision(True, event)
        if self._handler is None:
            event.update(decision="deny", by="no_client")
            return Decision(False, event)
        request: dict[str, Any] = {
            "agentName": self._agent_name,
            "runId": run_id,
            "title": f"{tool} {target}" if target else tool,
            # A call that changes something says how (ACP's edit or execute).
            "kind": EFFECT_KINDS[declaration.effect]
            if declaration.effect in ("write", "execute")
            else None,
            "optionKinds": ["allow_once", "allow_always", "reject_once"],
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
            event["scope"] = scope
            if scope == "session":
                self._granted.add(grant)
        return Decision(approved, event)


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
