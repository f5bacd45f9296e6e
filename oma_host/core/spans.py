"""What a span is, the attribute names spans carry, and how a run records them.

A run leaves a tree of spans, in the OpenTelemetry GenAI semantic
conventions' terms where they have one: one ``invoke_agent`` span per run
of an agent (any backend), under it a ``chat`` span per provider request
(the LLM backend's), an ``execute_tool`` span per tool call, a
``compaction`` span when the conversation is compacted, a ``delegation``
span under the ``delegate`` tool's ``execute_tool`` with the delegate's
``invoke_agent`` beneath it, and for a team run an ``invoke_workflow`` span
(the conventions' word for a multi-agent run) over a ``task`` span per task.
Every attribute name is a constant here; the ``oma.`` ones are the host's
own, for facts the conventions have no name for.

**Recording** travels beside the run, as :mod:`oma_host.core.activity`'s
words do: a door that keeps spans wraps the run in :func:`recording` with
its sinks (:class:`SpanSink`: told when each span starts and ends), and the
core, the LLM loop and the orchestration open spans with :func:`open_span`.
One context variable holds the recording and the current span, so a run
nobody records pays one lookup per step and no span is built; asyncio tasks
copy the context when they are created, so a tool call run in a task of its
own, or a delegate's run, nests under the span that was current then.

**Content** (the prompt, the model's text, a tool call's arguments and
result) is message text, and goes into span attributes only when the
recording was opened with ``capture_content=True`` (off by default), and
then through the run's redactor and bounded (:func:`set_span_content`). A span also
has ``local``: what the host's own store keeps of it and no exporter sends.
A tool call's input goes there, always redacted (``runs show`` shows what
each call was asked, as the stored session shows its messages), and into
an attribute only with content capture on. So a trace sent elsewhere
carries no message text unless the user asked for it, and the local store
holds no more than its stored sessions already do.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from oma_host.core.bounded_text import bounded_text

if TYPE_CHECKING:
    from oma_host.core.redact import Redactor
    from oma_host.core.results import TokenUsage

# -- the conventions' attribute names --------------------------------------------

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"  # every input token, cached ones included
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
CONVERSATION_ID = "gen_ai.conversation.id"
ERROR_TYPE = "error.type"
HTTP_STATUS = "http.response.status_code"
# Content: set only with content capture on (see the module docstring).
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"

# -- the host's own ----------------------------------------------------------------

RUN_ID = "oma.run.id"
COST_USD = "oma.cost_usd"
TURNS = "oma.turns"  # an invoke_agent span's provider replies
BACKEND = "oma.backend"  # an invoke_agent span's backend kind: llm, process, acp
PERMISSION_DECISION = "oma.permission.decision"  # allow, deny
PERMISSION_BY = "oma.permission.by"  # rule, default, mode, client, no_client, timeout
PERMISSION_RULE = "oma.permission.rule"
TOOL_EFFECT = "oma.tool.effect"
TOOL_SOURCE = "oma.tool.source"  # builtin, mcp
DELEGATE_AGENT = "oma.delegation.agent"
DELEGATION_DEPTH = "oma.delegation.depth"
COMPACTION_STRATEGY = "oma.compaction.strategy"
COMPACTION_TRIGGER = "oma.compaction.trigger"
COMPACTION_MESSAGES_BEFORE = "oma.compaction.messages_before"
COMPACTION_MESSAGES_AFTER = "oma.compaction.messages_after"
COMPACTION_TOKENS_BEFORE = "oma.compaction.tokens_before"
COMPACTION_TOKENS_AFTER = "oma.compaction.tokens_after"
TEAM_METHOD = "oma.team.method"  # oma/runTeam, oma/runTasks
TEAM_TASKS = "oma.team.tasks"
TASK_ID = "oma.task.id"
TASK_ASSIGNEE = "oma.task.assignee"
TASK_STATUS = "oma.task.status"  # completed, failed, skipped
TASK_DEPENDS_ON = "oma.task.depends_on"
STATUS = "oma.status"  # an exported span's status when it was cancelled or skipped

# ``local`` keys: kept in the host's store, never exported.
LOCAL_TOOL_INPUT = "toolInput"
LOCAL_TASK_REASON = "taskReason"  # why a task failed or was skipped

# -- operations (gen_ai.operation.name) ---------------------------------------------

OP_INVOKE_AGENT = "invoke_agent"
OP_CHAT = "chat"
OP_EXECUTE_TOOL = "execute_tool"
OP_TEAM = "invoke_workflow"  # the conventions' multi-agent run
OP_COMPACTION = "compaction"
OP_DELEGATION = "delegation"
OP_TASK = "task"
# Spans that stand for a request to a model or another process (OTel kind CLIENT).
CLIENT_OPERATIONS = frozenset({OP_CHAT})

# skipped: a task that never ran (a dependency failed, the budget was spent).
SpanStatus = Literal["ok", "error", "cancelled", "skipped"]
AttributeValue = str | int | float | bool | list[str]
Attributes = dict[str, AttributeValue]


@dataclass(slots=True)
class Span:
    """One step of a run: ids in the W3C form (32 and 16 lowercase hex
    digits), epoch nanoseconds, the operation and the span's name in the
    conventions' form (``"chat claude-sonnet-4-5"``), its status and
    attributes, and ``local`` (kept by the host's store only)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    run_id: str | None
    operation: str
    name: str
    start_ns: int
    end_ns: int | None = None
    status: SpanStatus = "ok"
    attributes: Attributes = field(default_factory=dict)
    local: dict[str, Any] = field(default_factory=dict)
    # A root span of a run a client traced: its parent in the client's trace
    # (exported as the parent; locally the span stays a root), and the
    # client's ``tracestate``.
    remote_parent_id: str | None = None
    trace_state: str | None = None

    @property
    def duration_ns(self) -> int:
        return 0 if self.end_ns is None else self.end_ns - self.start_ns


class SpanSink(Protocol):
    """Where a recording's spans go: told when each one starts (its
    attributes as set so far) and when it ends (complete). Called on the
    run's path: a sink only keeps or queues the span."""

    def span_started(self, span: Span) -> None: ...

    def span_ended(self, span: Span) -> None: ...


class CollectedSpans:
    """A sink that keeps the spans that ended, in the order they ended
    (children before their parents): what a door stores with its run."""

    def __init__(self) -> None:
        self.spans: list[Span] = []

    def span_started(self, span: Span) -> None:
        pass

    def span_ended(self, span: Span) -> None:
        self.spans.append(span)

    @property
    def trace_id(self) -> str | None:
        """The trace of the first root span that ended (the run's)."""
        return next((s.trace_id for s in self.spans if s.parent_id is None), None)


@dataclass(frozen=True, slots=True)
class TraceParent:
    """A client's span that a run continues (W3C ``traceparent``, with its ``tracestate``)."""

    trace_id: str
    span_id: str
    trace_state: str | None = None


_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")


def parse_traceparent(value: object, state: object = None) -> TraceParent | None:
    """The span a W3C ``traceparent`` header names, or None for a value that
    is not one (an unknown version ``ff``, all-zero ids, the wrong form)."""
    if not isinstance(value, str):
        return None
    found = _TRACEPARENT.fullmatch(value.strip())
    if found is None or found[1] == "ff" or (found[1] == "00" and found[5]):
        return None
    trace_id, span_id = found[2], found[3]
    if not int(trace_id, 16) or not int(span_id, 16):
        return None
    return TraceParent(trace_id, span_id, state if isinstance(state, str) and state else None)


def traceparent_of(span: Span) -> str:
    """The W3C ``traceparent`` naming ``span`` (sampled)."""
    return f"00-{span.trace_id}-{span.span_id}-01"


@dataclass(frozen=True, slots=True)
class _Recording:
    sinks: tuple[SpanSink, ...]
    capture_content: bool
    conversation_id: str | None
    remote: TraceParent | None = None


@dataclass(frozen=True, slots=True)
class _Scope:
    recording: _Recording
    span: Span | None


_scope: ContextVar[_Scope | None] = ContextVar("oma_span_scope", default=None)


@contextmanager
def recording(
    *sinks: SpanSink,
    capture_content: bool = False,
    conversation_id: str | None = None,
    remote: TraceParent | None = None,
) -> Iterator[None]:
    """Record the spans of the runs started inside this block to ``sinks``.
    ``capture_content``: message text goes into attributes (redacted);
    ``conversation_id``: the session the runs belong to (a client's run's
    ``invoke_agent`` span carries it); ``remote``: the client's span the
    runs continue (their trace, its span their parent). Inside another
    recording, the spans go to both, nested under its current span."""
    outer = _scope.get()
    parent = None if outer is None else outer.span
    if outer is not None:
        sinks = (*outer.recording.sinks, *sinks)
        capture_content = capture_content or outer.recording.capture_content
        conversation_id = conversation_id or outer.recording.conversation_id
        remote = remote or outer.recording.remote
    recorded = _Recording(sinks, capture_content, conversation_id, remote)
    token = _scope.set(_Scope(recorded, parent))
    try:
        yield
    finally:
        _scope.reset(token)


def _new_id(bits: int) -> str:
    while not (value := random.getrandbits(bits)):  # all zeros is not a valid id
        pass
    return f"{value:0{bits // 4}x}"


@contextmanager
def open_span(
    operation: str,
    name: str,
    attributes: Attributes | None = None,
    *,
    run_id: str | None = None,
) -> Iterator[Span | None]:
    """A span for the block, a child of the current span (a new trace when
    there is none), current inside it; None when nobody records. Its
    status is what the block set (``ok`` by default), or ``cancelled``
    when the block is cancelled, or ``error`` with ``error.type`` the
    exception's class when it raises. ``run_id`` defaults to the parent's."""
    scope = _scope.get()
    if scope is None:
        yield None
        return
    parent = scope.span
    # A root span continues the client's trace when the recording has one.
    remote = scope.recording.remote if parent is None else None
    if parent is not None:
        trace_id, trace_state = parent.trace_id, parent.trace_state
    elif remote is not None:
        trace_id, trace_state = remote.trace_id, remote.trace_state
    else:
        trace_id, trace_state = _new_id(128), None
    span = Span(
        trace_id=trace_id,
        span_id=_new_id(64),
        parent_id=None if parent is None else parent.span_id,
        run_id=run_id if run_id is not None or parent is None else parent.run_id,
        operation=operation,
        name=name,
        start_ns=time.time_ns(),
        attributes={OPERATION: operation, **(attributes or {})},
        remote_parent_id=None if remote is None else remote.span_id,
        trace_state=trace_state,
    )
    sinks = scope.recording.sinks
    for sink in sinks:
        sink.span_started(span)
    token = _scope.set(_Scope(scope.recording, span))
    try:
        yield span
    except BaseException as error:
        # CancelledError, or a KeyboardInterrupt ending the host: not a fault of the step.
        if isinstance(error, Exception):
            span.status = "error"
            span.attributes.setdefault(ERROR_TYPE, type(error).__name__)
        else:
            span.status = "cancelled"
        raise
    finally:
        _scope.reset(token)
        span.end_ns = time.time_ns()
        for sink in sinks:
            sink.span_ended(span)


def current_span() -> Span | None:
    """The span the code runs in, when it is recorded."""
    scope = _scope.get()
    return None if scope is None else scope.span


def conversation_id() -> str | None:
    """The session the recording's runs belong to, when it said."""
    scope = _scope.get()
    return None if scope is None else scope.recording.conversation_id


def capturing_content() -> bool:
    """Whether message text goes into this recording's attributes."""
    scope = _scope.get()
    return scope is not None and scope.recording.capture_content


def set_span_attributes(attributes: Attributes) -> None:
    """Add ``attributes`` to the current span (nothing when nobody records)."""
    scope = _scope.get()
    if scope is not None and scope.span is not None:
        scope.span.attributes.update(attributes)


def set_span_content(span: Span | None, name: str, value: Any, redactor: Redactor) -> None:
    """Set a content attribute (``value``: a string, or JSON data written
    as a JSON string) on ``span``, redacted and bounded as ``storePayloads:
    "redacted"`` keeps a payload (:mod:`oma_host.core.bounded_text`), when
    the recording captures content; otherwise nothing."""
    if span is None or not capturing_content():
        return
    span.attributes[name] = bounded_text(value, redactor.redact)


def end_as(span: Span | None, code: str, error_type: str | None = None) -> None:
    """Set a span's status from a run's status code (``ok``, ``cancelled``,
    else an error: ``timeout``, ``budget_exhausted``...), with ``error.type``
    the result's error kind, else its code."""
    if span is None:
        return
    if code == "ok":
        span.status = "ok"
    elif code == "cancelled":
        span.status = "cancelled"
    else:
        span.status = "error"
        span.attributes[ERROR_TYPE] = error_type or code


def usage_attributes(usage: TokenUsage) -> Attributes:
    """A TokenUsage's counts under the conventions' names. Their
    ``input_tokens`` counts every input token, cached ones included, where
    a TokenUsage's counts those not read from or written to a cache."""
    read = usage.get("cache_read_input_tokens", 0)
    written = usage.get("cache_creation_input_tokens", 0)
    attributes: Attributes = {
        INPUT_TOKENS: usage["input_tokens"] + read + written,
        OUTPUT_TOKENS: usage["output_tokens"],
    }
    if read:
        attributes[CACHE_READ_TOKENS] = read
    if written:
        attributes[CACHE_CREATION_TOKENS] = written
    return attributes


def string_list(values: Sequence[str]) -> list[str]:
    """A string array attribute (a copy: attributes never share a caller's list)."""
    return [str(value) for value in values]
