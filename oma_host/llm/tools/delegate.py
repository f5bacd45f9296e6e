"""``delegate {agent, task}``: hand another agent of the session a task and answer its output.

The schema lists the agent's ``delegates`` as an enum (:func:`for_delegates`);
:mod:`oma_host.llm.delegation` carries the call out. Its effect is ``execute``,
since the delegate may run commands or write files, so the policy asks by
default and a rule matches the delegate's name. The call is bounded by the
delegate's ``timeoutMs``, not ``toolTimeoutMs``: it is a whole run.
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
