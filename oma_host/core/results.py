"""AgentRunResult, StreamEvent and the recorder every backend fills while it runs.

Results are plain dicts shaped exactly as PROTOCOL.md section 3 writes them, so
the Python API and the wire return the same thing. A :class:`RunRecorder` is
the running tally of one run (text, messages, usage, tool calls); when a run is
cancelled or times out, the partial result is built from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import (
    Any,
    Literal,
    NotRequired,  # pydantic needs it before 3.12
)

from typing_extensions import TypedDict

from oma_host.core.messages import LLMMessage, clone

StatusCode = Literal["ok", "error", "cancelled", "timeout", "budget_exhausted"]


class TokenUsage(TypedDict):
    input_tokens: int
    output_tokens: int


class RunStatus(TypedDict):
    code: StatusCode
    message: NotRequired[str]


class ToolCallRecord(TypedDict):
    toolName: str
    input: dict[str, Any]
    output: str
    duration: float


class ErrorInfo(TypedDict):
    kind: str
    message: str


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


class StreamEvent(TypedDict):
    type: str
    data: Any


EmitFn = Callable[[StreamEvent], None]


def zero_usage() -> TokenUsage:
    return {"input_tokens": 0, "output_tokens": 0}


@dataclass
class RunRecorder:
    """The running tally of one run; backends append, the agent reads."""

    run_id: str
    emit: EmitFn = field(default=lambda event: None, repr=False)
    text_parts: list[str] = field(default_factory=list)
    messages: list[LLMMessage] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=zero_usage)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def text(self, chunk: str) -> None:
        """Record a chunk of output text and stream it."""
        if chunk:
            self.text_parts.append(chunk)
            self.emit({"type": "text", "data": chunk})

    def event(self, kind: str, data: Any) -> None:
        """Stream an event other than text; ``data`` is copied for the consumer."""
        self.emit({"type": kind, "data": clone(data)})

    def add_usage(self, input_tokens: int = 0, output_tokens: int = 0) -> None:
        self.usage["input_tokens"] += input_tokens
        self.usage["output_tokens"] += output_tokens

    @property
    def output(self) -> str:
        return "".join(self.text_parts)

    def result(
        self,
        code: StatusCode = "ok",
        message: str | None = None,
        *,
        output: str | None = None,
        error_kind: str | None = None,
        **extra: Any,
    ) -> AgentRunResult:
        """Build the AgentRunResult from what was recorded so far."""
        return make_result(
            self.run_id,
            code,
            message,
            output=self.output if output is None else output,
            messages=self.messages,
            usage=self.usage,
            tool_calls=self.tool_calls,
            error_kind=error_kind,
            **extra,
        )


def make_result(
    run_id: str,
    code: StatusCode = "ok",
    message: str | None = None,
    *,
    output: str = "",
    messages: list[LLMMessage] | None = None,
    usage: TokenUsage | None = None,
    tool_calls: list[ToolCallRecord] | None = None,
    error_kind: str | None = None,
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


def failed_result(run_id: str, kind: str, message: str) -> AgentRunResult:
    """A run that failed before any backend work (hook failures, boundary faults)."""
    return make_result(run_id, "error", message, output=message, error_kind=kind)
