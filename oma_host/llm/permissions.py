"""The permission policy for an LLM agent's tools (``config.permissions``).

Rules are tried in order; the first whose ``tool`` (a name or an fnmatch
glob such as ``fs__*``) matches the tool's name and whose ``pattern``, if it
has one, matches the call's main argument (its ``path``, ``command``...,
see :func:`target_of`) decides. When none matches, the defaults hold: the
read tools are allowed, the write tools and every MCP tool ask.

``ask`` goes to the client (``agent/requestPermission`` with ``source:
"tool"``) through the agent's permission handler, for at most
``hooks.timeoutMs``. The answer ``{approve: true, scope: "session"}`` allows
the same tool under the same rule for the rest of the backend's life (the
agent's, until it is reset or disposed) without asking again. No handler
(teams, runs without a client), no answer in time, an error or any other
answer denies. Every decision becomes a ``permission`` stream event.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from oma_host.core.config import PermissionRule

Action = Literal["allow", "ask", "deny"]
READ_TOOLS = frozenset({"file_read", "grep", "glob"})
WRITE_TOOLS = frozenset({"file_write", "file_edit"})
# The argument that says what a call touches, in the order looked for.
_TARGET_FIELDS = ("path", "command", "file", "filename", "uri", "url", "pattern")
PermissionHandler = Callable[[dict[str, Any]], Awaitable[Any]]


def target_of(arguments: Any) -> str | None:
    """The call's main argument: the first string among ``path``,
    ``command``, ``file``, ``filename``, ``uri``, ``url``, ``pattern``."""
    if not isinstance(arguments, dict):
        return None
    for field in _TARGET_FIELDS:
        value = arguments.get(field)
        if isinstance(value, str):
            return value
    return None


@dataclass(frozen=True)
class Verdict:
    """What the policy says before anyone is asked: the action, and the rule
    (its index) or the default that said it."""

    action: Action
    rule: int | None  # None: a default


def default_action(tool: str, is_mcp: bool) -> Action:
    if is_mcp or tool in WRITE_TOOLS:
        return "ask"
    return "allow" if tool in READ_TOOLS else "ask"


def evaluate(
    rules: list[PermissionRule], tool: str, target: str | None, *, is_mcp: bool
) -> Verdict:
    """The first matching rule's action, else the default."""
    for index, rule in enumerate(rules):
        if not fnmatch.fnmatchcase(tool, rule.tool):
            continue
        if rule.pattern is not None and (
            target is None or not fnmatch.fnmatchcase(target, rule.pattern)
        ):
            continue
        return Verdict(rule.action, index)
    return Verdict(default_action(tool, is_mcp), None)


@dataclass(frozen=True)
class Decision:
    """Whether the call may run, and why (the ``permission`` event's data)."""

    allowed: bool
    event: dict[str, Any]


class PermissionPolicy:
    """One agent's rules, its session grants and the client to ask."""

    def __init__(
        self,
        rules: list[PermissionRule] | None,
        handler: PermissionHandler | None,
        agent_name: str,
        timeout_s: float,
    ) -> None:
        self._rules = list(rules or [])
        self._handler = handler
        self._agent_name = agent_name
        self._timeout_s = timeout_s
        self._granted: set[tuple[str, int | None]] = set()  # (tool, rule) allowed for the session

    async def decide(
        self, tool: str, arguments: Any, *, is_mcp: bool, run_id: str, tool_use_id: str
    ) -> Decision:
        target = target_of(arguments)
        verdict = evaluate(self._rules, tool, target, is_mcp=is_mcp)
        event: dict[str, Any] = {"toolUseId": tool_use_id, "tool": tool, "action": verdict.action}
        if target is not None:
            event["target"] = target
        event["rule"] = verdict.rule
        if verdict.action != "ask":
            event.update(
                decision=verdict.action, by="rule" if verdict.rule is not None else "default"
            )
            return Decision(verdict.action == "allow", event)
        if (tool, verdict.rule) in self._granted:
            event.update(decision="allow", by="session")
            return Decision(True, event)
        if self._handler is None:
            event.update(decision="deny", by="no_client")
            return Decision(False, event)
        request: dict[str, Any] = {
            "agentName": self._agent_name,
            "runId": run_id,
            "title": f"{tool} {target}" if target else tool,
            "kind": "edit" if tool in WRITE_TOOLS else None,
            "optionKinds": ["allow_once", "allow_always", "reject_once"],
            "source": "tool",
            "tool": {"name": tool, "input": arguments if isinstance(arguments, dict) else {}},
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
                self._granted.add((tool, verdict.rule))
        return Decision(approved, event)


def _read_answer(answer: Any) -> tuple[bool | None, str]:
    """``{approve: bool, scope?: "once" | "session"}`` as (approve, scope);
    (None, ...) for anything else."""
    if not isinstance(answer, dict) or not isinstance(answer.get("approve"), bool):
        return None, "once"
    scope = answer.get("scope", "once")
    if scope not in ("once", "session"):
        return None, "once"
    return answer["approve"], scope
