"""The permission policy for an LLM agent's tools (``config.permissions``).

Rules are tried in order; the first whose ``tool`` (a name or an fnmatch
glob such as ``fs__*``) matches the tool's name and whose ``pattern``, if it
has one, matches the call's main argument (the target its declaration
names, :class:`oma_host.core.tools.ToolDeclaration`; for an MCP tool the
first string among ``path``, ``command``..., :func:`target_of`) decides.
When none matches, the default follows the tool's declared effect: a tool
that reads is allowed, any other (the write tools, every MCP tool) asks.

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
from dataclasses import dataclass
from typing import Any, Literal

from oma_host.core.backends import PermissionHandler
from oma_host.core.config import PermissionRule
from oma_host.core.tools import ToolDeclaration, first_string

Action = Literal["allow", "ask", "deny"]
# The main argument of a tool that names none (an MCP server's): the first
# string among ``path``, ``command``, ``file``, ``filename``, ``uri``, ``url``,
# ``pattern``.
target_of = first_string("path", "command", "file", "filename", "uri", "url", "pattern")


def undeclared_tool(name: str, description: str, input_schema: dict[str, Any]) -> ToolDeclaration:
    """The declaration of a tool the host knows only by its listing (an MCP
    server's): the effect ``other``, which asks by default, and the main
    argument :func:`target_of` finds."""
    return ToolDeclaration(name, description, input_schema, effect="other", target=target_of)


@dataclass(frozen=True)
class Verdict:
    """What the policy says before anyone is asked: the action, and the rule
    (its index) or the default that said it."""

    action: Action
    rule: int | None  # None: a default


def default_action(tool: ToolDeclaration) -> Action:
    """What a call no rule matches gets: reading is allowed, the rest asks."""
    return "allow" if tool.effect == "read" else "ask"


def evaluate(rules: list[PermissionRule], tool: ToolDeclaration, target: str | None) -> Verdict:
    """The first matching rule's action, else the default."""
    for index, rule in enumerate(rules):
        if not fnmatch.fnmatchcase(tool.name, rule.tool):
            continue
        if rule.pattern is not None and (
            target is None or not fnmatch.fnmatchcase(target, rule.pattern)
        ):
            continue
        return Verdict(rule.action, index)
    return Verdict(default_action(tool), None)


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
        self, declaration: ToolDeclaration, arguments: Any, *, run_id: str, tool_use_id: str
    ) -> Decision:
        tool = declaration.name
        target = declaration.target(arguments)
        verdict = evaluate(self._rules, declaration, target)
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
            "kind": "edit" if declaration.effect == "write" else None,
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
