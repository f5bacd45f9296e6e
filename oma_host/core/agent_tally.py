"""An agent's tally, what ``agent/state`` shows of it: its status as its
runs start and end (``idle``, ``running``, ``completed``, ``error``), and
what its runs and compactions added up to: token usage, and the cost in
USD while every run's price was known. The :class:`~oma_host.core.agent.Agent`
keeps one and clears it on reset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from oma_host.core.results import (
    AgentRunResult,
    RunRecorder,
    TokenUsage,
    add_token_usage,
    usd,
    zero_usage,
)

if TYPE_CHECKING:
    from oma_host.core.cost import Prices
    from oma_host.core.history import CompactOutcome

AgentStatus = Literal["idle", "running", "completed", "error"]


class AgentTally:
    """The status, usage and cost of one agent's runs."""

    def __init__(self, prices: Prices | None) -> None:
        self.prices = prices  # the agent's own, for a run its backend did not price
        self.status: AgentStatus = "idle"
        self.usage: TokenUsage = zero_usage()
        self.cost = 0.0  # every run's, in USD, while the prices are known
        self.cost_known = True  # False once a run's cost was not known
        self.active_runs = 0

    def state(self) -> dict[str, Any]:
        """``status``, ``tokenUsage`` and, while it is known, ``cost``."""
        state: dict[str, Any] = {"status": self.status, "tokenUsage": dict(self.usage)}
        if self.prices is not None and self.cost_known:
            state["cost"] = usd(self.cost)
        return state

    def reset(self) -> None:
        self.status = "idle"
        self.usage = zero_usage()
        self.cost = 0.0
        self.cost_known = True

    def run_started(self) -> AgentStatus:
        """Count a run in flight; the status before it, for :meth:`run_ended`."""
        previous = self.status
        self.active_runs += 1
        self.status = "running"
        return previous

    def price(self, recorder: RunRecorder, result: AgentRunResult) -> None:
        """Give ``result`` its ``cost`` and add it up: as its backend priced
        each reply (an LLM agent's replies may come from fallback models at
        other prices) and added its delegates' costs, else its usage at the
        agent's prices. A run whose price is not known leaves the cost
        unknown from then on (an unpriced fallback model's reply or delegate)."""
        if recorder.cost is not None:
            cost = recorder.cost if recorder.cost_known else None
        else:
            cost = None if self.prices is None else self.prices.cost(result["tokenUsage"])
        if cost is not None:
            result["cost"] = usd(cost)
            self.cost += cost
        elif self.prices is not None:
            self.cost_known = False

    def run_ended(self, result: AgentRunResult | None, previous: AgentStatus) -> None:
        """A run ended with ``result`` (None: it raised, so it never happened
        as far as the tally goes) after :meth:`run_started` returned ``previous``."""
        self.active_runs -= 1
        if result is None:
            self.status = previous if self.active_runs == 0 else "running"
            return
        add_token_usage(self.usage, result["tokenUsage"])  # cache counts too
        if self.active_runs == 0:
            self.status = _status_after(result)

    def compacted(self, outcome: CompactOutcome) -> None:
        """Add what a compaction on request's summary cost."""
        add_token_usage(self.usage, outcome.usage)
        self.cost += outcome.cost or 0.0


def _status_after(result: AgentRunResult) -> AgentStatus:
    """The agent's status once its last run ended: a cancelled run was
    stopped by request, not a fault, so the agent is ``idle`` again."""
    if result["success"]:
        return "completed"
    return "idle" if result["status"]["code"] == "cancelled" else "error"
