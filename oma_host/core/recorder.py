"""The run recorder a backend fills as a run runs: text, messages, usage, tool
calls and streamed events; the result, even a cancelled run's, comes from it.

Text is redacted as a stream: a key split across deltas is caught."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from typing_extensions import TypeIs

from oma_host.core.compaction import CompactionMark
from oma_host.core.config import DelegationConfig
from oma_host.core.delegation import Lineage
from oma_host.core.errors import ErrorKind
from oma_host.core.events import (
    EmitFn,
    ReasoningEvent,
    RunError,
    RunEvent,
    TextEvent,
    ToolOutputTerminal,
    ToolOutputText,
    ToolPermission,
)
from oma_host.core.guard import clone
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import (
    AgentRunResult,
    StatusCode,
    TokenUsage,
    ToolCallRecord,
    add_token_usage,
    make_result,
    zero_usage,
)

# The events whose data are deltas of one text, redacted as a stream.
StreamedKind = Literal["text", "reasoning"]


def _delta_event(kind: StreamedKind, delta: str) -> TextEvent | ReasoningEvent:
    if kind == "text":
        return {"type": "text", "data": delta}
    return {"type": "reasoning", "data": delta}


def is_text_output(output: ToolOutputText | ToolOutputTerminal) -> TypeIs[ToolOutputText]:
    """Whether a ``tool_output`` event carries text (else: the terminal that shows it)."""
    return "text" in output


class StreamRedaction:
    """Takes a redactor's secret values out of a text that arrives in deltas.

    Redacting each delta alone misses a secret split between two of them, so
    the end of the text that could be the start of a secret (shorter than the
    longest secret, unless secrets overlap there) is held back until the next
    delta shows whether it is, or until :meth:`finish`. The pieces given out,
    joined, are the whole text redacted."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._secrets = redactor.values
        self._reach = max((len(secret) for secret in self._secrets), default=1) - 1
        # A secret in the text, or the start of one at its end, begins with one of these.
        self._firsts = tuple({secret[0] for secret in self._secrets})
        self._held = ""

    def feed(self, delta: str) -> str:
        """The part of the text so far that can be given out, redacted."""
        if not self._secrets:
            return delta
        if not self._held and self._redactor.keeps(delta):
            # Most deltas: nothing held, no secret in it, and none can begin
            # at its end (no first character of one there), so all of it goes
            # out as it is, as the general path below would find.
            tail = max(0, len(delta) - self._reach)
            for first in self._firsts:
                if delta.find(first, tail) != -1:
                    break
            else:
                return delta
        text = self._held + delta
        cut = self._safe_end(text)
        self._held = text[cut:]
        return self._redactor.redact(text[:cut])

    def finish(self) -> str:
        """What is still held (the stream has ended), redacted."""
        held, self._held = self._held, ""
        return self._redactor.redact(held)

    def _safe_end(self, text: str) -> int:
        """Where ``text`` can be cut: before any end of it that begins a
        secret, and never through a secret that is whole in it."""
        cut = len(text)
        for start in range(max(0, len(text) - self._reach), len(text)):
            if any(secret.startswith(text[start:]) for secret in self._secrets):
                cut = start
                break
        moved = True
        while moved:
            moved = False
            for secret in self._secrets:
                found = text.find(secret, max(0, cut - len(secret) + 1), cut + len(secret) - 1)
                if found != -1 and found < cut:
                    cut, moved = found, True
        return cut


@dataclass
class RunRecorder:
    """The running tally of one run; backends append, the agent reads.

    With a ``redactor``, text and reasoning deltas are streamed through a
    :class:`StreamRedaction` each; what is held back is sent when the result
    is built (:meth:`result`), the end of the run's streams."""

    run_id: str
    emit: EmitFn = field(default=lambda event: None, repr=False)
    redactor: Redactor | None = field(default=None, repr=False)
    text_parts: list[str] = field(default_factory=list)
    messages: list[LLMMessage] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=zero_usage)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    # The model that gave the latest reply, for a backend that names it
    # (given as the result's ``model``).
    model: str | None = None
    # What the run has cost in USD, for a backend that prices each reply
    # itself (an LLM agent: at the prices of the model that gave it, and
    # what its delegates cost); None while it priced nothing. See add_cost.
    cost: float | None = None
    cost_known: bool = True
    # The run's place among delegations; None: a client started it.
    lineage: Lineage | None = None
    _streams: dict[StreamedKind, StreamRedaction] = field(
        default_factory=dict, init=False, repr=False
    )
    # A running tool call's output text, by its toolUseId.
    _tool_outputs: dict[str, StreamRedaction] = field(default_factory=dict, init=False, repr=False)
    # (the call's input object, its permission decision), see permission().
    _permissions: list[tuple[Any, ToolPermission]] = field(
        default_factory=list, init=False, repr=False
    )
    # The run's latest compaction of its conversation (an LLM backend's): the
    # agent makes the same change to its history when a prompt turn completes.
    compaction: CompactionMark | None = field(default=None, repr=False)

    def text(self, chunk: str) -> None:
        """Record a chunk of output text and stream it."""
        if chunk:
            self.text_parts.append(chunk)
            self._stream("text", chunk)

    def reasoning(self, chunk: str) -> None:
        """Stream a chunk of reasoning (not part of the output)."""
        if chunk:
            self._stream("reasoning", chunk)

    def event(self, event: RunEvent) -> None:
        """Stream an event; its data is copied for the consumer. (``text``
        and ``reasoning`` go as :meth:`text` and :meth:`reasoning` do, a
        tool call's output text as a stream of its own, which its
        ``tool_result`` ends.)"""
        if event["type"] == "text":
            self.text(event["data"])
        elif event["type"] == "reasoning":
            self.reasoning(event["data"])
        elif event["type"] == "tool_output" and is_text_output(output := event["data"]):
            self._tool_output(output["toolUseId"], output["text"])
        else:
            if event["type"] == "tool_result":
                self._end_tool_output(event["data"]["tool_use_id"])
            self.emit(clone(event))

    def _tool_output(self, tool_use_id: str, text: str) -> None:
        if self.redactor is not None:
            stream = self._tool_outputs.get(tool_use_id)
            if stream is None:
                stream = self._tool_outputs[tool_use_id] = StreamRedaction(self.redactor)
            text = stream.feed(text)
        if text:
            self.emit({"type": "tool_output", "data": {"toolUseId": tool_use_id, "text": text}})

    def _end_tool_output(self, tool_use_id: str) -> None:
        """Send what a tool call's output stream still holds back."""
        stream = self._tool_outputs.pop(tool_use_id, None)
        if stream is not None and (rest := stream.finish()):
            self.emit({"type": "tool_output", "data": {"toolUseId": tool_use_id, "text": rest}})

    def permission(self, tool_input: Any, decision: ToolPermission) -> None:
        """Stream a tool call's ``permission`` event and keep the decision
        for that call's ToolCallRecord: the record whose ``input`` is the
        very object ``tool_input`` gets it as ``permission`` in the result."""
        self._permissions.append((tool_input, decision))
        self.event({"type": "permission", "data": decision})

    def _tool_calls(self) -> list[ToolCallRecord]:
        """The tool call records, each with its permission decision if it had one."""
        if not self._permissions:
            return self.tool_calls
        records: list[ToolCallRecord] = []
        for record in self.tool_calls:
            decision = next((d for i, d in self._permissions if i is record["input"]), None)
            records.append(record if decision is None else {**record, "permission": decision})
        return records

    def _stream(self, kind: StreamedKind, delta: str) -> None:
        if self.redactor is not None:
            stream = self._streams.get(kind)
            if stream is None:
                stream = self._streams[kind] = StreamRedaction(self.redactor)
            delta = stream.feed(delta)
        if delta:
            self.emit(_delta_event(kind, delta))

    def end_streams(self) -> None:
        """Send what each text stream still holds back."""
        for kind, stream in self._streams.items():
            if rest := stream.finish():
                self.emit(_delta_event(kind, rest))
        for tool_use_id in list(self._tool_outputs):
            self._end_tool_output(tool_use_id)

    def place(self, settings: DelegationConfig | None) -> Lineage:
        """The run's lineage; a run a client started gets its tree's root,
        by its agent's ``delegation``, the first time it is asked."""
        if self.lineage is None:
            self.lineage = Lineage.root(settings)
        return self.lineage

    def tokens_used(self) -> int:
        """The run's input and output tokens so far (its delegates' too)."""
        return self.usage["input_tokens"] + self.usage["output_tokens"]

    def add_usage(self, input_tokens: int = 0, output_tokens: int = 0) -> None:
        self.usage["input_tokens"] += input_tokens
        self.usage["output_tokens"] += output_tokens

    def add_token_usage(self, usage: TokenUsage) -> None:
        """Add one provider reply's usage (or a delegate's run's), its
        optional counts included."""
        add_token_usage(self.usage, usage)

    def add_cost(self, amount: float | None) -> None:
        """Add what one reply (or a delegate's run) cost; None, a reply of a
        model with no known price, makes the run's cost unknown
        (``cost_known``): never a guess."""
        self.cost = (self.cost or 0.0) + (amount or 0.0)
        if amount is None:
            self.cost_known = False

    @property
    def output(self) -> str:
        return "".join(self.text_parts)

    def emit_failure(self, result: AgentRunResult) -> None:
        """Stream the ``error`` event a failed run sends before ``done``."""
        if result["status"]["code"] in ("ok", "cancelled"):
            return
        error: RunError = {"message": result["status"].get("message", "")}
        if "errorInfo" in result:
            error["kind"] = result["errorInfo"]["kind"]
        self.emit({"type": "error", "data": error})

    def result(
        self,
        code: StatusCode = "ok",
        message: str | None = None,
        *,
        output: str | None = None,
        error_kind: ErrorKind | None = None,
        **extra: Any,
    ) -> AgentRunResult:
        """Build the AgentRunResult from what was recorded so far; the run's
        text streams end here."""
        self.end_streams()
        if self.model is not None:
            extra.setdefault("model", self.model)
        return make_result(
            self.run_id,
            code,
            message,
            output=self.output if output is None else output,
            messages=self.messages,
            usage=self.usage,
            tool_calls=self._tool_calls(),
            error_kind=error_kind,
            **extra,
        )
