"""The events a run streams while it runs: one TypedDict per ``type``, their
union :data:`RunEvent`, and :data:`EmitFn`, what receives them.

Events are plain dicts ``{"type": <tag>, "data": <payload>}``, on the wire
exactly as built, so streaming them costs no conversion; the ``Literal`` tag
lets mypy narrow ``event["data"]`` on ``event["type"]``, and a consumer that
matches on the tag ends with ``assert_never`` so an event it does not handle
fails the type check. Backends emit them through the run's
:class:`~oma_host.core.recorder.RunRecorder` (``text``, ``reasoning``,
``permission``, and ``event`` for the rest), which checks each payload's type.
The ``done`` event that ends :meth:`Agent.stream <oma_host.core.agent.Agent.stream>`
carries the result, so it lives beside it (``results.DoneEvent``); no door
sends it as an event.

This module holds types only (the block types come from :mod:`.messages`);
``oma-host schema`` turns them into the ``$/progress`` schema, so each
class's docstring is what the schema says of it.

Adding an event:

1. here, a TypedDict for its ``data`` and one for the event, added to
   :data:`RunEvent`;
2. the backend emits it with ``recorder.event({"type": ..., "data": ...})``;
3. each door's dispatch then fails mypy until it handles the new tag: the
   ACP door's ``event_update`` (``acp_server/updates.py``); the JSON-RPC door
   sends every event as it is, as ``$/progress``;
4. ``python3 -m oma_host schema --out docs/protocol.schema.json`` and
   ``python3 -m oma_host.cli.protocol_doc`` regenerate the schema and the
   reference, and ``docs/protocol.md`` (section 4) says when it is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, NotRequired  # NotRequired: pydantic needs it before 3.12

from typing_extensions import TypedDict

from oma_host.core.messages import ToolResultBlock, ToolUseBlock

# -- literals the payloads share with the config and the tools --------------

# A permission rule's action (config.permissions), and so the decision's.
PermissionAction = Literal["allow", "ask", "deny"]
# How long a client's "allow" holds: this call, or the agent's session.
PermissionScope = Literal["once", "session"]
# A plan step's (ACP's PlanEntry): the ACP door sends them as they are.
PlanPriority = Literal["high", "medium", "low"]
PlanStatus = Literal["pending", "in_progress", "completed"]
# How a compaction made room, and what set it off (see Compaction).
CompactionStrategy = Literal["summarize", "sliding-window"]
CompactionTrigger = Literal["threshold", "too_long", "request"]

# -- payloads ----------------------------------------------------------------


class ToolPermission(TypedDict):
    """The permission policy's decision on one tool call (an LLM agent's
    tools, and an ACP agent's ``fs/write_text_file`` as the tool ``file_write``)."""

    toolUseId: str
    tool: str
    target: NotRequired[str]
    action: PermissionAction
    rule: int | None  # the index in config.permissions; None for a default
    decision: Literal["allow", "deny"]
    by: Literal[
        "rule",
        "default",
        "mode",
        "client",
        "session",
        "no_client",
        "timeout",
        "client_error",
        "bad_answer",
    ]
    scope: NotRequired[PermissionScope]
    message: NotRequired[str]  # with by: client_error, what the client answered


class AcpPermission(TypedDict):
    """A wrapped ACP agent's ``session/request_permission`` and the option
    answered (``decision``: its kind, or ``cancelled``)."""

    title: str
    kind: str | None
    optionKinds: list[str]
    decision: str
    optionId: NotRequired[str]


class RunError(TypedDict):
    """Why a streaming run failed: its ``status.message`` and ``errorInfo.kind``."""

    message: str
    kind: NotRequired[str]


class McpFiltered(TypedDict):
    """An MCP server a wrapped ACP agent cannot take, left out of ``session/new``."""

    name: str
    type: str
    reason: str


class AcpUpdate(TypedDict):
    """A wrapped ACP agent's ``session/update`` with no event of its own: the
    update's own camelCase fields, ``kind`` being its ``sessionUpdate``."""

    kind: str


class Authenticated(TypedDict):
    """The ACP bridge logged its agent in with this method."""

    methodId: str


class SessionRestarted(TypedDict):
    """The stored ACP session could not be resumed; a new one was opened."""

    previous: str
    sessionId: str
    reason: str


class CompactedMedia(TypedDict):
    """An image or a file of the compacted turns, which the compacted
    conversation no longer holds: where it was (``message`` and ``block`` in
    the conversation before, ``part`` inside a tool result) and what it was.
    A summary names it too."""

    kind: Literal["image", "file"]
    message: int
    block: int
    part: NotRequired[int]
    mediaType: str
    url: NotRequired[str]  # a source by URL
    filename: NotRequired[str]  # a file's name


class DroppedTurn(TypedDict):
    """A turn sliding-window dropped: where it began and the start of its prompt."""

    message: int
    text: str


class Compaction(TypedDict):
    """The conversation was compacted to fit the model's context window:
    ``before`` and ``after`` messages, their estimated tokens, and why
    (``trigger``: the estimate passed ``context.compactAt``, the provider
    answered that the request was too long, or ``agent/compact`` and
    ``/compact`` asked). ``summarize`` put one summary text block in place of
    the older turns (``summary``, its text); ``sliding-window`` dropped them
    (``dropped``). ``id`` is the one its ``compaction_started`` carried."""

    id: NotRequired[str]
    strategy: CompactionStrategy
    trigger: CompactionTrigger
    before: int
    after: int
    tokensBefore: int
    tokensAfter: int
    images: list[CompactedMedia]
    dropped: NotRequired[list[DroppedTurn]]
    summary: NotRequired[str]


class CompactionStarted(TypedDict):
    """A compaction began: its ``id`` names it in the ``compaction`` or
    ``compaction_failed`` event that ends it."""

    id: str
    strategy: CompactionStrategy
    trigger: CompactionTrigger


class CompactionFailed(TypedDict):
    """A compaction ended without compacting: the summary request failed
    (``error`` says why; the run fails with it) or the run was cancelled
    (``cancelled``)."""

    id: str
    trigger: CompactionTrigger
    error: str
    cancelled: bool


class ModelFallback(TypedDict):
    """An LLM agent's model failed a turn (an overload, a rate limit or a
    server error, after its retries); ``model``, the next of its
    ``fallbackModels``, is asked instead."""

    failed: str
    model: str
    status: int  # the HTTP status the failed model was answered with
    message: str


class Delegated(TypedDict):
    """An event of a delegate's run, under the ``delegate`` tool call that
    started it: the call's ``toolUseId``, the delegate's name, and its event
    as it streamed it (a delegate's own delegation nests one level more)."""

    toolUseId: str
    agent: str
    event: RunEvent


# -- events ------------------------------------------------------------------


class TextEvent(TypedDict):
    """A delta of the output text."""

    type: Literal["text"]
    data: str


class ReasoningEvent(TypedDict):
    """A delta of the model's (or an ACP agent's) reasoning."""

    type: Literal["reasoning"]
    data: str


class ToolUseEvent(TypedDict):
    """A tool call starting."""

    type: Literal["tool_use"]
    data: ToolUseBlock


class ToolResultEvent(TypedDict):
    """A tool call's result."""

    type: Literal["tool_result"]
    data: ToolResultBlock


class PermissionEvent(TypedDict):
    """A permission decision, before the tool call it decides."""

    type: Literal["permission"]
    data: ToolPermission | AcpPermission


class ToolOutputText(TypedDict):
    """A piece of a running tool call's output, as it comes (the shell's
    stdout and stderr, interleaved; pieces gathered for up to 0.1 s)."""

    toolUseId: str
    text: str


class ToolOutputTerminal(TypedDict):
    """The editor's terminal a tool call runs in, which shows its output
    live (the shell, behind the ACP door of an editor with terminals)."""

    toolUseId: str
    terminalId: str


class ToolOutputEvent(TypedDict):
    """A running tool call's output, before its result: the text as it
    comes, or the editor's terminal that shows it."""

    type: Literal["tool_output"]
    data: ToolOutputText | ToolOutputTerminal


class PlanEntry(TypedDict):
    """One step of an agent's plan (ACP's ``PlanEntry``)."""

    content: str
    priority: PlanPriority
    status: PlanStatus


class Plan(TypedDict):
    """The whole plan, as the agent's ``update_plan`` call gave it."""

    entries: list[PlanEntry]


class PlanEvent(TypedDict):
    """The agent's plan, whole, each time it changes (the ``update_plan`` tool)."""

    type: Literal["plan"]
    data: Plan


class DelegateEvent(TypedDict):
    """An event of an agent this run handed a task to with its ``delegate``
    tool, nested whole, between that call's ``tool_use`` and ``tool_result``."""

    type: Literal["delegate"]
    data: Delegated


class ErrorEvent(TypedDict):
    """A failed run's error, the last event before the answer."""

    type: Literal["error"]
    data: RunError


class McpFilteredEvent(TypedDict):
    """An MCP server left out, in the first run of an ACP agent's session."""

    type: Literal["mcp_filtered"]
    data: McpFiltered


class AcpUpdateEvent(TypedDict):
    """A wrapped ACP agent's update with no event of its own, streamed as it
    sent it: ``{kind: <sessionUpdate>, ...its own fields}``."""

    type: Literal["acp_update"]
    data: AcpUpdate


class AuthenticatedEvent(TypedDict):
    """An ACP agent was logged in before its session opened."""

    type: Literal["authenticated"]
    data: Authenticated


class SessionRestartedEvent(TypedDict):
    """An ACP agent's stored session was replaced by a new one."""

    type: Literal["session_restarted"]
    data: SessionRestarted


class CompactionEvent(TypedDict):
    """The conversation was compacted before a request to the provider."""

    type: Literal["compaction"]
    data: Compaction


class CompactionStartedEvent(TypedDict):
    """A compaction began, before its summary request."""

    type: Literal["compaction_started"]
    data: CompactionStarted


class CompactionFailedEvent(TypedDict):
    """A compaction that began did not complete."""

    type: Literal["compaction_failed"]
    data: CompactionFailed


class ModelFallbackEvent(TypedDict):
    """The turn goes on with a fallback model."""

    type: Literal["model_fallback"]
    data: ModelFallback


RunEvent = (
    TextEvent
    | ReasoningEvent
    | ToolUseEvent
    | ToolOutputEvent
    | ToolResultEvent
    | PermissionEvent
    | PlanEvent
    | DelegateEvent
    | ErrorEvent
    | McpFilteredEvent
    | AcpUpdateEvent
    | AuthenticatedEvent
    | SessionRestartedEvent
    | ModelFallbackEvent
    | CompactionStartedEvent
    | CompactionEvent
    | CompactionFailedEvent
)

EmitFn = Callable[[RunEvent], None]
