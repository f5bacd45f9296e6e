"""How an LLM agent's ``delegate`` call runs; the bounds are :mod:`oma_host.core.delegation`'s.

:class:`Delegation` holds one agent's delegates. A call the bounds refuse is an
error result to the model; otherwise the delegate runs fresh on the task
string, within what the caller has left of its budgets, its events and spending
counted as the caller's. It runs in a task of its own so that a cancelled
caller aborts it and waits for its cancelled result before going on.
docs/tools.md, "Delegation".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial

from oma_host.core.abort import AbortSignal
from oma_host.core.activity import report_activity
from oma_host.core.backends import Delegate, DelegateLookup
from oma_host.core.config import AgentConfig
from oma_host.core.delegation import Lineage
from oma_host.core.errors import InvalidMessageError
from oma_host.core.events import RunEvent
from oma_host.core.recorder import RunRecorder
from oma_host.core.results import AgentRunResult
from oma_host.core.spans import (
    DELEGATE_AGENT,
    DELEGATION_DEPTH,
    OP_DELEGATION,
    Attributes,
    end_as,
    open_span,
)
from oma_host.workspace.confined import ToolError

# What the ``delegate`` tool is handed for one call: (agent, task) -> output.
DelegateCall = Callable[[str, str], Awaitable[str]]


class Delegation:
    """One agent's delegates; see the module docstring."""

    def __init__(self, config: AgentConfig, lookup: DelegateLookup) -> None:
        self._names = tuple(config.delegates or ())
        self._settings = config.delegation
        self._budgets = (config.max_token_budget, config.max_cost_budget)
        self._lookup = lookup

    def for_call(self, recorder: RunRecorder, tool_use_id: str) -> DelegateCall:
        """What the tool's call of ``tool_use_id`` in this run delegates with."""
        return partial(self.run, recorder, tool_use_id)

    async def run(self, recorder: RunRecorder, tool_use_id: str, name: str, task: str) -> str:
        """Hand ``task`` to the delegate ``name``; its output (ToolError:
        why it could not be handed on, or how the delegate failed)."""
        if name not in self._names:
            raise ToolError(
                f"{name!r} is not an agent this one may delegate to "
                f"(its delegates: {', '.join(self._names)})"
            )
        lineage = recorder.place(self._settings)
        refusal = lineage.refusal()
        if refusal is not None:
            raise ToolError(refusal)
        tokens, cost = self._left(lineage, recorder)
        delegate = self._lookup(name)
        if delegate is None:
            raise ToolError(f"agent {name!r} is no longer in this session (it was disposed)")
        try:
            messages = delegate.validate_run_input(task, "task")
        except InvalidMessageError as error:
            raise ToolError(str(error)) from None
        child = lineage.child(delegate.config.delegation, tokens=tokens, cost=cost)
        report_activity(f"delegating to {name}")

        def nested(event: RunEvent) -> None:
            recorder.event(
                {
                    "type": "delegate",
                    "data": {"toolUseId": tool_use_id, "agent": name, "event": event},
                }
            )

        abort = AbortSignal()
        attributes: Attributes = {DELEGATE_AGENT: name, DELEGATION_DEPTH: child.depth}
        with open_span(OP_DELEGATION, f"{OP_DELEGATION} {name}", attributes) as span:
            # Made inside the span: the delegate's task copies the context,
            # so its run's span is this one's child.
            running = asyncio.ensure_future(
                delegate.execute(
                    messages,
                    run_id=f"{recorder.run_id}:{tool_use_id}",
                    abort=abort,
                    emit=nested,
                    lineage=child,
                )
            )
            try:
                result = await asyncio.shield(running)
            except asyncio.CancelledError:
                abort.abort()
                count_spending(recorder, delegate, await running)
                raise
            count_spending(recorder, delegate, result)
            failure = result.get("errorInfo")
            end_as(span, result["status"]["code"], None if failure is None else failure["kind"])
        if result["success"]:
            return result["output"] or f"(agent {name!r} answered with no text)"
        status = result["status"]
        raise ToolError(f"agent {name!r} failed: {status.get('message') or status['code']}")

    def _left(self, lineage: Lineage, recorder: RunRecorder) -> tuple[int | None, float | None]:
        """What the caller has left of its budgets (its own, or what its
        callers left it), for the delegate to spend at most; ToolError when
        nothing is left."""
        token_budget, cost_budget = lineage.budgets(*self._budgets)
        tokens = None if token_budget is None else token_budget - recorder.tokens_used()
        cost = None if cost_budget is None else cost_budget - (recorder.cost or 0.0)
        if (tokens is not None and tokens <= 0) or (cost is not None and cost <= 0):
            raise ToolError(
                "this run's budget is spent (maxTokenBudget or maxCostBudget): "
                "answer with what you have"
            )
        return tokens, cost


def count_spending(recorder: RunRecorder, delegate: Delegate, result: AgentRunResult) -> None:
    """Count what a delegate's run spent as the caller's run's: its tokens
    join the caller's usage (``maxTokenBudget`` sees them) and its cost the
    caller's cost (``maxCostBudget`` sees it, and the caller's result,
    ``agent/state`` and the ACP door's ``usage_update`` carry it). The cost
    is the delegate's result's own, at its models' prices. An LLM delegate
    whose result has none (and that spent tokens) had a reply of a model
    with no known price, so the caller's cost is unknown too; a process or
    ACP delegate is priced by no model of the host's and adds nothing."""
    usage = result["tokenUsage"]
    recorder.add_token_usage(usage)
    if "cost" in result:
        recorder.add_cost(result["cost"]["amount"])
    elif delegate.config.backend is None and (usage["input_tokens"] or usage["output_tokens"]):
        recorder.add_cost(None)
