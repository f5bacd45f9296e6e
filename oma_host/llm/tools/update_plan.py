"""``update_plan {entries}``: the agent's whole plan, streamed as a ``plan`` event.

It touches nothing outside the run, so its effect is ``read`` and it runs
unasked in every permission mode.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from oma_host.core.events import PlanEntry, PlanPriority, PlanStatus
from oma_host.core.tools import UPDATE_PLAN
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Stop


class PlanStep(BaseModel):
    model_config = ConfigDict(extra="ignore")

    content: NonEmpty = Field(description="what the step does, in a short sentence")
    priority: PlanPriority = "medium"
    status: PlanStatus = "pending"


class UpdatePlanParams(ToolParams):
    entries: list[PlanStep] = Field(
        description="the whole plan, every step in order (not only the changed ones)"
    )


async def _run(params: UpdatePlanParams, workspace: Workspace, stop: Stop) -> str:
    entries: list[PlanEntry] = [
        {"content": step.content, "priority": step.priority, "status": step.status}
        for step in params.entries
    ]
    if workspace.report is not None:
        workspace.report({"type": "plan", "data": {"entries": entries}})
    done = sum(entry["status"] == "completed" for entry in entries)
    return f"plan updated: {len(entries)} steps, {done} completed"


TOOL = declare(UPDATE_PLAN, UpdatePlanParams, _run)
