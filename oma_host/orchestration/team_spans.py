"""A team run's spans: ``invoke_workflow`` over the run, a ``task`` span per task.

A failed or skipped task's reason stays in its span's ``local`` part: the store
shows it, no exporter sends it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from oma_host.core.spans import (
    LOCAL_TASK_REASON,
    OP_TASK,
    OP_TEAM,
    TASK_ASSIGNEE,
    TASK_DEPENDS_ON,
    TASK_ID,
    TASK_STATUS,
    TEAM_METHOD,
    TEAM_TASKS,
    Attributes,
    Span,
    end_as,
    open_span,
    string_list,
    usage_attributes,
)


@contextmanager
def team_span(method: str, run_id: str) -> Iterator[Span | None]:
    """The span of a team run made by ``method`` (``oma/runTeam``, ``oma/runTasks``)."""
    with open_span(OP_TEAM, f"{OP_TEAM} team", {TEAM_METHOD: method}, run_id=run_id) as span:
        yield span


def end_team_span(span: Span | None, result: Mapping[str, Any], cancelled: bool) -> None:
    """A team result on its span: ok when every task completed, cancelled
    when its request was, its usage."""
    if span is None:
        return
    error = result.get("errorInfo")
    kind = None if error is None else str(error["kind"])
    code = "ok" if result["success"] else "cancelled" if cancelled else "error"
    end_as(span, code, kind or "task_failed")
    span.attributes.update(usage_attributes(result["tokenUsage"]))
    span.attributes[TEAM_TASKS] = len(result["tasks"])


@contextmanager
def task_span(task_id: str, assignee: str, depends_on: Sequence[str]) -> Iterator[Span | None]:
    """The span of one task; its agent's ``invoke_agent`` span goes under it."""
    attributes: Attributes = {TASK_ID: task_id, TASK_ASSIGNEE: assignee}
    if depends_on:
        attributes[TASK_DEPENDS_ON] = string_list(depends_on)
    with open_span(OP_TASK, f"{OP_TASK} {task_id}", attributes) as span:
        yield span


def end_task_span(span: Span | None, status: str, reason: str | None = None) -> None:
    """A task's outcome (completed, failed, skipped) on its span, and why
    it failed or was skipped."""
    if span is None:
        return
    span.attributes[TASK_STATUS] = status
    if status == "failed":
        end_as(span, "error", "task_failed")
    elif status == "skipped":
        span.status = "skipped"
    if reason is not None and status != "completed":
        span.local[LOCAL_TASK_REASON] = reason
