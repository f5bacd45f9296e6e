"""``delegate {agent, task}``: hand another agent of the session a task, as
a string, and answer with its output (open-multi-agent's
``delegate_to_agent``).

An agent has this tool when its config lists ``delegates``; ``agent`` is
one of those names (the schema the model sees lists them as an enum,
:func:`for_delegates`). The delegate runs the task fresh, as ``agent/run``
would, its history untouched; a delegate behind a process or ACP bridge
gets the task's text and nothing else. Its events stream nested under the
call (``delegate`` events), its tokens and cost count as the caller's, and
a delegation the bounds refuse, a delegate that is gone or a delegate's
failed run is an error result naming why (:mod:`oma_host.llm.delegation`
carries it out).

Its effect is ``execute``: the delegate may run commands or write files of
its own, so the policy asks by default, ``read-only`` refuses it, and a rule
matches the agent's name (``{tool: "delegate", pattern: "reviewer",
action: "allow"}``). A call is bounded by the delegate's own ``timeoutMs``,
not ``toolTimeoutMs``: it is a whole run of another agent.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from pydantic import Field

from oma_host.core.tools import DELEGATE
from oma_host.llm.tools.base import BuiltinTool, NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Stop, ToolError

NAME = DELEGATE.name


class DelegateParams(ToolParams):
    agent: NonEmpty = Field(description="the agent to hand the task to")
    task: NonEmpty = Field(
        description="the task, with everything the agent needs to know: it sees none of "
        "this conversation, only this text"
    )


async def _run(params: DelegateParams, workspace: Workspace, stop: Stop) -> str:
    if workspace.delegate is None:  # the tool is offered only with delegates
        raise ToolError("this agent has no agents to delegate to")
    return await workspace.delegate(params.agent, params.task)


TOOL = declare(DELEGATE, DelegateParams, _run)


def for_delegates(names: list[str]) -> BuiltinTool[DelegateParams]:
    """The tool as an agent with these ``delegates`` offers it: ``agent``
    one of the names."""
    schema: dict[str, Any] = copy.deepcopy(TOOL.declaration.input_schema)
    schema["properties"]["agent"]["enum"] = list(names)
    return replace(TOOL, declaration=replace(TOOL.declaration, input_schema=schema))
