"""A run's result as the doors and the Python API return it: ``AgentRunResult``,
its usage, cost and status, and its builders.

Plain dicts shaped as docs/protocol.md writes them ("Runs and their
results"), so the wire needs no conversion."""

from __future__ import annotations

from typing import (
    Any,
    Final,
    Literal,
    NotRequired,  # pydantic needs it before 3.12
    get_args,
)

from typing_extensions import TypedDict

from oma_host.core.errors import ErrorKind
from oma_host.core.events import RunEvent, ToolPermission
from oma_host.core.guard import clone
from oma_host.core.messages import LLMMessage

StatusCode = Literal["ok", "error", "cancelled", "timeout", "budget_exhausted"]


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    # Present when the provider reports them. Prompt caching: the input written
    # to and read from the cache, not counted in ``input_tokens``; thinking: the
    # reasoning tokens, counted in ``output_tokens`` too.
    cache_creation_input_tokens: NotRequired[int]
    cache_read_input_tokens: NotRequired[int]
    reasoning_tokens: NotRequired[int]


OptionalUsage = Literal[
    "cache_creation_input_tokens", "cache_read_input_tokens", "reasoning_tokens"
]
# The optional counts of TokenUsage, summed like the required ones.
OPTIONAL_USAGE: tuple[OptionalUsage, ...] = get_args(OptionalUsage)


def add_token_usage(total: TokenUsage, usage: TokenUsage) -> None:
    """Add ``usage`` into ``total``, its optional counts included."""
    total["input_tokens"] += usage["input_tokens"]
    total["output_tokens"] += usage["output_tokens"]
    for name in OPTIONAL_USAGE:
        if name in usage:
            total[name] = total.get(name, 0) + usage[name]


class RunStatus(TypedDict):
    code: StatusCode
    message: NotRequired[str]


class ToolCallRecord(TypedDict):
    toolName: str
    input: dict[str, Any]
    output: str
    duration: float
    # An LLM agent's permission decision for the call: its ``permission``
    # event's data (an optional field, so older readers are unaffected).
    permission: NotRequired[ToolPermission]


class ErrorInfo(TypedDict):
    kind: ErrorKind
    message: str


class Cost(TypedDict):
    """What runs cost, from the agent's prices (``core/cost.py``)."""

    amount: float
    currency: Literal["USD"]


def usd(amount: float) -> Cost:
    return {"amount": round(amount, 8), "currency": "USD"}


class AgentRunResult(TypedDict):
    success: bool
    output: str
    messages: list[LLMMessage]
    tokenUsage: TokenUsage
    toolCalls: list[ToolCallRecord]
    status: RunStatus
    identity: dict[str, str]
    structured: NotRequired[Any]
    budgetExceeded: NotRequired[bool]
    aborted: NotRequired[bool]
    errorInfo: NotRequired[ErrorInfo]
    cost: NotRequired[Cost]  # when the agent's prices are known
    # An LLM agent's: the model that gave the run's latest reply (one of its
    # fallbackModels when the configured model failed for that turn).
    model: NotRequired[str]


class DoneEvent(TypedDict):
    """The last event of ``Agent.stream``: the run's result. Not emitted while
    the run runs, so not sent as ``$/progress``: the answer carries it."""

    type: Literal["done"]
    data: AgentRunResult


# What ``Agent.stream`` yields: the run's events, then ``done``.
StreamEvent = RunEvent | DoneEvent


def zero_usage() -> TokenUsage:
    return {"input_tokens": 0, "output_tokens": 0}


def make_result(
    run_id: str,
    code: StatusCode = "ok",
    message: str | None = None,
    *,
    output: str = "",
    messages: list[LLMMessage] | None = None,
    usage: TokenUsage | None = None,
    tool_calls: list[ToolCallRecord] | None = None,
    error_kind: ErrorKind | None = None,
    **extra: Any,
) -> AgentRunResult:
    status: RunStatus = {"code": code}
    if message is not None:
        status["message"] = message
    result: AgentRunResult = {
        "success": code == "ok",
        "output": output,
        "messages": clone(messages or []),
        "tokenUsage": dict(usage or zero_usage()),  # type: ignore[typeddict-item]
        "toolCalls": clone(tool_calls or []),
        "status": status,
        "identity": {"runId": run_id},
    }
    if code == "budget_exhausted":
        result["budgetExceeded"] = True
    if code in ("cancelled", "timeout"):
        result["aborted"] = True
    if error_kind is not None:
        result["errorInfo"] = {"kind": error_kind, "message": message or code}
    result.update(extra)  # type: ignore[typeddict-item]
    return result


# ``errorInfo.kind`` of a ``budget_exhausted`` result: which limit ended the
# run, in ACP's stop-reason words (the LLM loop's token budget, or a wrapped ACP
# agent's own stop reason), so a door maps it without reading the message.
MAX_TOKENS_KIND: Final = "max_tokens"
MAX_TURN_REQUESTS_KIND: Final = "max_turn_requests"
# The LLM loop's cost budget (maxCostBudget); ACP has no word of its own for it.
COST_BUDGET_KIND: Final = "budget"


def ended_at_turn_limit(result: AgentRunResult) -> bool:
    """Whether a successful run stopped at ``maxTurns``: its last message is
    the results of tools the model asked for and never saw, which a run that
    ended on the model's own answer cannot have."""
    messages = result["messages"]
    if not result["success"] or not messages or messages[-1]["role"] != "user":
        return False
    content = messages[-1]["content"]
    return bool(content) and all(block.get("type") == "tool_result" for block in content)


def failed_result(run_id: str, kind: ErrorKind, message: str) -> AgentRunResult:
    """A run that failed before any backend work (hook failures, boundary faults)."""
    return make_result(run_id, "error", message, output=message, error_kind=kind)
