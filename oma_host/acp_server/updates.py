"""A turn's events as ACP ``session/update`` notifications, its result as the prompt answer.

:func:`event_update` matches every event type and mypy checks it, so an event
added to the core fails the type check here until it is mapped. The updates
every turn sends and the answer are built as plain dicts, held equal to the
schema models' dumps by ``tests/acp_server/test_wire_forms.py``; the rest are
built as models, but for what the library lacks (``compaction_update``,
``notice``, the client's ``session`` capabilities). Those, the chunks and
the capabilities read from the wire form are typed with the TypedDicts
generated from the v1 schema (:mod:`.wire_v1`), and checked against it by
``tests/acp_server/test_schema_v1.py``. Every update of a turn is written
before its answer.
docs/acp.md, "What it serves".
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, assert_never, cast

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    PlanEntry,
    PromptResponse,
    SessionInfoUpdate,
    SessionNotification,
    StopReason,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    Usage,
    UsageUpdate,
    UserMessageChunk,
)
from pydantic import BaseModel, ValidationError

from oma_host.acp_server import commands
from oma_host.acp_server.auth import auth_required
from oma_host.acp_server.delegate_text import DelegateText
from oma_host.acp_server.message_ids import TurnMessages
from oma_host.acp_server.wire_v1 import (
    ClientSessionCapabilities,
    CompactionStatus,
    CompactionUpdate,
    ContentChunk,
    ElicitationCapabilities,
    MessageId,
    Notice,
    NoticeSeverity,
)
from oma_host.acp_server.wire_v1 import ContentBlock as AcpContentBlock
from oma_host.core.config import AgentConfig
from oma_host.core.cost import context_window_of
from oma_host.core.events import (
    AcpUpdate,
    Compaction,
    RunEvent,
    ToolOutputTerminal,
    ToolOutputText,
)
from oma_host.core.messages import ContentBlock
from oma_host.core.recorder import is_text_output
from oma_host.core.results import MAX_TURN_REQUESTS_KIND, AgentRunResult, ended_at_turn_limit
from oma_host.core.tools import EFFECT_KINDS, ToolFacts, ToolKind, builtin_tool

log = logging.getLogger(__name__)

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
)

# The context size reported in usage_update when the config sets no budget:
# providers do not report their context windows.
NOMINAL_CONTEXT_SIZE = 200_000
# How much of a running call's output its updates show: the latest characters
# (each update's content replaces the last, so it carries the output so far).
LIVE_OUTPUT_CHARS = 16_000


class UpdateSink(Protocol):
    """The part of the ACP connection that sends session updates
    (:class:`.editor.EditorClient`)."""

    def send_update(self, session_id: str, update: Mapping[str, Any]) -> None: ...

    async def drain(self) -> None: ...


def wire_update(update: BaseModel) -> dict[str, Any]:
    """An update model in its wire form, dumped as the library dumps a
    ``session/update``'s params."""
    dumped: dict[str, Any] = update.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
    )
    return dumped


ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk"]


def _chunk(kind: ChunkKind, data: Any, message: MessageId | None = None) -> ContentChunk:
    """``agent_message_chunk`` / ``agent_thought_chunk`` of one text delta,
    with the id of the message it is part of when there is one."""
    # A plain str is what the schema's TextContentBlock takes, dumped as is;
    # the model refuses what it cannot take.
    text = data if type(data) is str else _text(data).text
    chunk: ContentChunk = {"content": {"text": text, "type": "text"}, "sessionUpdate": kind}
    if message is not None:
        chunk["messageId"] = message
    return chunk


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def message_update(text: str) -> ContentChunk:
    """``agent_message_chunk`` of a whole text the door says itself."""
    return _chunk("agent_message_chunk", text)


def replayed_update(update: SessionUpdate, message: MessageId) -> Mapping[str, Any]:
    """A stored conversation's update in its wire form, as ``session/load``
    replays it: a message chunk with its message's ``messageId``."""
    wire = wire_update(update)
    if isinstance(update, UserMessageChunk | AgentMessageChunk | AgentThoughtChunk):
        chunk = cast(ContentChunk, wire)  # the library's chunk: the v1 form but for the id
        chunk["messageId"] = message
        return chunk
    return wire


def commands_update(available: list[dict[str, Any]]) -> dict[str, Any]:
    """``available_commands_update`` (wire form)."""
    return {"availableCommands": available, "sessionUpdate": "available_commands_update"}


def _kind(tool: ToolFacts | None) -> ToolKind:
    if tool is None:
        return "other"
    if tool.think:
        return "think"
    return "search" if tool.search else EFFECT_KINDS[tool.effect]


def _locations(
    tool: ToolFacts | None, tool_input: Mapping[str, Any], cwd: str
) -> list[ToolCallLocation]:
    """The file or folder the call touches, as an absolute path, when the
    tool declares one and it stays inside ``cwd`` (no ``..`` out of it, no
    absolute path elsewhere): a path outside is the model's, not shown."""
    where = tool.location(tool_input) if tool is not None and tool.location else None
    if where is None:
        return []
    root = os.path.normpath(cwd)
    target = os.path.normpath(os.path.join(root, where))
    if target != root and not target.startswith(root.rstrip("/") + "/"):
        return []
    return [ToolCallLocation(path=target)]


def proposed_diff(
    tool: ToolFacts | None, tool_input: Any, cwd: str
) -> FileEditToolCallContent | None:
    """The change a write proposes, as ACP ``diff`` content at its file's
    absolute path (the text it replaces, or null for a whole file's, and the
    new text), when the tool declares one and the file stays inside ``cwd``."""
    change = tool.change(tool_input) if tool is not None and tool.change else None
    locations = _locations(tool, tool_input if isinstance(tool_input, dict) else {}, cwd)
    if change is None or not locations:
        return None
    old_text, new_text = change
    return FileEditToolCallContent(
        type="diff", path=locations[0].path, old_text=old_text, new_text=new_text
    )


def tool_use_update(block: ContentBlock, cwd: str) -> ToolCallStart:
    """``tool_call`` for a tool_use block (the model asked for a tool); a
    write's proposed change comes as its ``diff`` content."""
    name = str(block.get("name", "tool"))
    given = block.get("input")
    tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
    tool = builtin_tool(name)
    diff = proposed_diff(tool, tool_input, cwd)
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=str(block.get("id", "")),
        title=name,
        kind=_kind(tool),
        status="in_progress",
        content=None if diff is None else [diff],
        locations=_locations(tool, tool_input, cwd) or None,
        raw_input=tool_input,
    )


def _output_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(
        str(part.get("text")) if part.get("type") == "text" else f"[{part.get('type')}]"
        for part in parts
        if isinstance(part, dict)
    )


def tool_result_update(block: ContentBlock) -> ToolCallProgress:
    """``tool_call_update`` for a tool_result block: the status and the output."""
    output = _output_text(block.get("content", ""))
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=str(block.get("tool_use_id", "")),
        status="failed" if block.get("is_error") else "completed",
        content=[ContentToolCallContent(type="content", content=_text(output))],
        raw_output=output,
    )


def tool_output_update(data: ToolOutputText | ToolOutputTerminal) -> ToolCallProgress:
    """``tool_call_update`` for a running call's output: its text as
    content, or the editor's terminal that shows it."""
    call = data["toolUseId"]
    if is_text_output(data):
        text = ContentToolCallContent(type="content", content=_text(data["text"]))
        return ToolCallProgress(
            session_update="tool_call_update", tool_call_id=call, content=[text]
        )
    terminal = TerminalToolCallContent(type="terminal", terminal_id=data["terminalId"])
    return ToolCallProgress(
        session_update="tool_call_update", tool_call_id=call, content=[terminal]
    )


def _passed_through(data: AcpUpdate) -> dict[str, Any]:
    """A wrapped ACP agent's update in its wire form (the bridge keeps its
    camelCase fields, with ``sessionUpdate`` renamed ``kind``): dumped from
    the schema's model when the library knows its kind, else exactly as the
    agent sent it. An update kind newer than the library is the editor's to
    read or ignore; dropping it here would break the bridge's promise that
    every update is streamed."""
    raw: dict[str, Any] = {"sessionUpdate": data["kind"]}
    raw.update((key, value) for key, value in data.items() if key != "kind")
    try:
        notification = SessionNotification.model_validate({"sessionId": "-", "update": raw})
    except ValidationError:
        return raw
    return wire_update(notification.update)


@dataclass(frozen=True)
class ClientFeatures:
    """What the client said in ``initialize`` it takes beyond the library's
    models (``clientCapabilities.session``: ``compaction``, ``notices``;
    ``clientCapabilities.elicitation``), read from the wire form."""

    compaction: bool = False
    notices: bool = False
    # ``elicitation.form``: the editor fills in an MCP server's forms.
    elicitation_form: bool = False

    @classmethod
    def of(cls, capabilities: Mapping[str, Any]) -> ClientFeatures:
        # Objects as the client sent them: each field is checked as it is read.
        session = cast(ClientSessionCapabilities, _object(capabilities.get("session")))
        elicitation = cast(ElicitationCapabilities, _object(capabilities.get("elicitation")))
        return cls(
            compaction=isinstance(session.get("compaction"), dict),
            notices=isinstance(session.get("notices"), dict),
            elicitation_form=isinstance(elicitation.get("form"), dict),
        )


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def compaction_update(
    compaction_id: str,
    status: CompactionStatus,
    *,
    summary: list[AcpContentBlock] | None = None,
    error: str | None = None,
) -> CompactionUpdate:
    """A ``compaction_update`` (wire form): one compaction's lifecycle,
    ``in_progress`` first, by its id."""
    update: CompactionUpdate = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    }
    if summary is not None:
        update["summary"] = summary
    if error is not None:
        update["error"] = error
    return update


def notice_update(severity: NoticeSeverity, title: str, description: str | None = None) -> Notice:
    """A ``notice`` (wire form): something the user should know, shown by a
    client that takes notices."""
    update: Notice = {"sessionUpdate": "notice", "severity": severity, "title": title}
    if description:
        update["description"] = description
    return update


def compaction_done(compaction: Compaction) -> list[AcpContentBlock]:
    """A completed compaction's summary content: what was compacted, then the
    summary the model wrote (text blocks, wire form)."""
    blocks: list[AcpContentBlock] = [{"type": "text", "text": commands.compaction_note(compaction)}]
    if compaction.get("summary"):
        blocks.append({"type": "text", "text": compaction["summary"]})
    return blocks


def _compaction_events(
    event: RunEvent, features: ClientFeatures
) -> CompactionUpdate | Notice | ContentChunk | None:
    """A compaction's events: ``compaction_update`` for a client that takes
    them, else a thought chunk when it completed (or a notice, else a
    thought, when it failed)."""
    if event["type"] == "compaction_started":
        if features.compaction:
            return compaction_update(event["data"]["id"], "in_progress")
        return None
    if event["type"] == "compaction":
        done = event["data"]
        if features.compaction and "id" in done:
            return compaction_update(done["id"], "completed", summary=compaction_done(done))
        return _chunk("agent_thought_chunk", commands.compaction_note(done))
    if event["type"] == "compaction_failed":
        failed = event["data"]
        if features.compaction:
            if failed["cancelled"]:
                return compaction_update(failed["id"], "cancelled")
            return compaction_update(failed["id"], "failed", error=failed["error"])
        if failed["cancelled"]:
            return None
        if features.notices:
            return notice_update(
                "error", "The conversation could not be compacted", failed["error"]
            )
        return _chunk(
            "agent_thought_chunk", f"The conversation could not be compacted: {failed['error']}"
        )
    return None


def event_update(
    event: RunEvent,
    cwd: str,
    features: ClientFeatures = ClientFeatures(),
    message: MessageId | None = None,
) -> dict[str, Any] | None:
    """The ACP update for one event in its wire form, or None when it has
    none; a text or reasoning chunk carries ``message``, its message's id.
    (The generated forms are copied into plain dicts, which the turn's
    sender completes in place.)"""
    if event["type"] == "text":
        return dict(_chunk("agent_message_chunk", event["data"], message))
    if event["type"] == "reasoning":
        return dict(_chunk("agent_thought_chunk", event["data"], message))
    if event["type"] == "tool_use":
        # The tool updates read the block as the untyped ContentBlock.
        return wire_update(tool_use_update(cast(ContentBlock, event["data"]), cwd))
    if event["type"] == "tool_result":
        return wire_update(tool_result_update(cast(ContentBlock, event["data"])))
    if event["type"] == "tool_output":
        return wire_update(tool_output_update(event["data"]))
    if event["type"] == "acp_update":
        return _passed_through(event["data"])
    if event["type"] == "plan":
        entries = [
            PlanEntry(content=entry["content"], priority=entry["priority"], status=entry["status"])
            for entry in event["data"]["entries"]
        ]
        return wire_update(AgentPlanUpdate(session_update="plan", entries=entries))
    if event["type"] == "mcp_filtered":
        filtered = event["data"]
        log.warning(
            "MCP server %r was not passed to the ACP agent: %s",
            filtered["name"],
            filtered["reason"],
        )
        return None
    if (
        event["type"] == "compaction_started"
        or event["type"] == "compaction"
        or event["type"] == "compaction_failed"
    ):
        compaction = _compaction_events(event, features)
        return None if compaction is None else dict(compaction)
    if event["type"] == "delegate":
        return None  # the text accumulates in UpdateSender (a state of the turn)
    if event["type"] == "permission" or event["type"] == "error":
        return None
    if event["type"] == "authenticated" or event["type"] == "session_restarted":
        log.warning("a %r event has no ACP form; not sent", event["type"])
        return None
    if event["type"] == "model_fallback":
        # The turn's text is the fallback model's; a client that takes
        # notices is told, and the log always is.
        fallback = event["data"]
        log.warning(
            "model %s failed (HTTP %d), %s answers this turn: %s",
            fallback["failed"],
            fallback["status"],
            fallback["model"],
            fallback["message"],
        )
        if features.notices:
            return dict(
                notice_update(
                    "warning",
                    f"{fallback['failed']} failed; {fallback['model']} answers this turn",
                    f"HTTP {fallback['status']}: {fallback['message']}",
                )
            )
        return None
    assert_never(event)


class UpdateSender:
    """Sends one session's updates, each as soon as it is emitted; a
    ConnectionError (the editor is gone) is logged once and the turn still
    completes."""

    def __init__(
        self,
        sink: UpdateSink,
        session_id: str,
        cwd: str,
        features: ClientFeatures = ClientFeatures(),
        messages: TurnMessages | None = None,
    ) -> None:
        self._sink = sink
        self._features = features
        # A turn's sender gives its chunks their message's id.
        self._messages = messages
        self._session_id = session_id
        self._cwd = cwd
        self._gone = False
        # An update's content replaces the call's, so what a call must keep
        # showing is sent again in each of its updates: a write's diff, the
        # terminal a command runs in (by tool call id).
        self._kept: dict[str, list[Any]] = {}
        self._terminals: set[str] = set()
        # A running call's output so far (its last LIVE_OUTPUT_CHARS).
        self._live: dict[str, str] = {}
        self._delegations: DelegateText | None = None  # made at the first delegate event

    def emit(self, event: RunEvent) -> None:
        if event["type"] == "delegate":
            if self._delegations is None:
                self._delegations = DelegateText(self._delegate_output)
            self._delegations.add(event["data"])
            return
        message = self._message_of(event)
        update = event_update(event, self._cwd, self._features, message)
        if update is None:
            return
        if event["type"] == "tool_use" and "content" in update:
            self._kept[update["toolCallId"]] = update["content"]
        elif event["type"] == "tool_output":
            self._running_output(update)
        elif event["type"] == "tool_result":
            call = update["toolCallId"]
            if self._delegations is not None:
                self._delegations.end(call)
            self._live.pop(call, None)
            kept = self._kept.pop(call, [])
            if call in self._terminals:  # the terminal shows the output; the text is rawOutput
                self._terminals.discard(call)
                update["content"] = kept
            elif kept:
                update["content"] = [*kept, *update.get("content", [])]
        self.send(update)

    def _message_of(self, event: RunEvent) -> str | None:
        """The id of the message ``event`` is part of, for a turn's sender."""
        messages = self._messages
        if messages is None:
            return None
        if event["type"] in ("text", "reasoning", "tool_use"):
            return messages.reply_part()
        if event["type"] == "tool_result":
            messages.tool_result()
        elif event["type"] == "compaction":
            messages.compacted(event["data"])
        return None

    def _delegate_output(self, call_id: str, text: str) -> None:
        """A piece of a delegate's text, shown as its ``delegate`` call's
        running output, as a shell command's is."""
        self.emit({"type": "tool_output", "data": {"toolUseId": call_id, "text": text}})

    def _running_output(self, update: dict[str, Any]) -> None:
        """A ``tool_output`` update made to carry all its call shows."""
        call = update["toolCallId"]
        shown = update["content"][0]
        kept = self._kept.setdefault(call, [])
        if shown["type"] == "terminal":
            self._terminals.add(call)
            kept.append(shown)
            update["content"] = list(kept)
            return
        live = (self._live.get(call, "") + shown["content"]["text"])[-LIVE_OUTPUT_CHARS:]
        self._live[call] = live
        text = {"type": "content", "content": {"type": "text", "text": live}}
        update["content"] = [*kept, text]

    def send(self, update: Mapping[str, Any]) -> None:
        if self._gone:
            return
        try:
            self._sink.send_update(self._session_id, update)
        except ConnectionError:
            self._gone = True
            log.info("session %s: the client left; updates not sent", self._session_id)

    async def close(self) -> None:
        """Wait while the editor is not reading (returns at once otherwise).
        What is still gathered goes out with the turn's answer, before it."""
        if self._delegations is not None:
            self._delegations.close()
        if not self._gone:
            await self._sink.drain()


def _ints(*values: Any) -> bool:
    """Whether every value is a plain int (what the schema's int fields dump unchanged)."""
    return all(type(value) is int for value in values)


def usage_update(result: AgentRunResult, config: AgentConfig, cost: float) -> dict[str, Any]:
    """The context the turn used, as ``usage_update`` reports it (wire
    form): ``used``, the turn's input and output tokens (cache reads and
    writes included); ``size``, the model's context window
    (``contextWindow``, else its table's), else ``maxTokenBudget``, else a
    nominal 200,000; ``cost``, the session's so far when its prices are known."""
    usage = result["tokenUsage"]
    used = (
        usage["input_tokens"]
        + usage["output_tokens"]
        + usage.get("cache_creation_input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
    )
    return context_update(used, config, cost if "cost" in result else None)


def context_update(used: int, config: AgentConfig, cost: float | None) -> dict[str, Any]:
    """``usage_update`` with ``used`` tokens of the context (see
    :func:`usage_update`; after ``/compact``, the compacted history's
    estimate), and the session's cost when known."""
    size = max(context_window_of(config) or config.max_token_budget or NOMINAL_CONTEXT_SIZE, used)
    # In the order the model dumps its fields.
    update: dict[str, Any] = {"used": used, "size": size}
    if cost is not None:
        update["cost"] = {"amount": round(cost, 8), "currency": "USD"}
    update["sessionUpdate"] = "usage_update"
    if _ints(used, size):
        return update
    return wire_update(UsageUpdate.model_validate(update))


def title_update(title: str) -> dict[str, Any]:
    """``session_info_update`` with the session's new title (wire form)."""
    return wire_update(
        SessionInfoUpdate(
            session_update="session_info_update",
            title=title,
            updated_at=datetime.now(UTC).isoformat(),
        )
    )


def prompt_answer(reason: StopReason, result: AgentRunResult) -> dict[str, Any]:
    """The ``session/prompt`` result: the stop reason and the turn's tokens,
    as the library dumped ``PromptResponse`` (unset fields left out)."""
    usage = result["tokenUsage"]
    given, taken = usage["input_tokens"], usage["output_tokens"]
    if _ints(given, taken):
        return {
            "stopReason": reason,
            "usage": {"totalTokens": given + taken, "inputTokens": given, "outputTokens": taken},
        }
    answer = PromptResponse(
        stop_reason=reason,
        usage=Usage(input_tokens=given, output_tokens=taken, total_tokens=given + taken),
    )
    dumped: dict[str, Any] = answer.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True
    )
    return dumped


def stop_notice(result: AgentRunResult) -> Notice | None:
    """The notice for a turn a guard ended (its budget, ``maxTurns``, loop
    detection) or an MCP server failed (it could not start, or died), in
    wire form; None for any other end."""
    status = result["status"]
    kind = result.get("errorInfo", {}).get("kind")
    message = status.get("message") or None
    if status["code"] == "budget_exhausted" and kind != MAX_TURN_REQUESTS_KIND:
        return notice_update("warning", "The turn stopped at its budget", message)
    if status["code"] == "ok" and ended_at_turn_limit(result):
        return notice_update(
            "warning", "The turn stopped at its limit of model requests (maxTurns)"
        )
    if kind == "loop":
        return notice_update(
            "error", "The turn was stopped: the agent was repeating itself", message
        )
    if kind == "mcp":
        return notice_update("error", "An MCP server failed", message)
    return None


def stop_reason(result: AgentRunResult) -> StopReason:
    """The stop reason of a finished turn, read from the result's data (never
    its message); RequestError for a failed run."""
    status = result["status"]
    code = status["code"]
    message = status.get("message", "")
    kind = result.get("errorInfo", {}).get("kind")
    if code == "ok":
        return "max_turn_requests" if ended_at_turn_limit(result) else "end_turn"
    if code == "cancelled":
        return "cancelled"
    if code == "budget_exhausted":
        # A wrapped ACP agent's own reason, else the token budget (a team's too).
        return "max_turn_requests" if kind == MAX_TURN_REQUESTS_KIND else "max_tokens"
    if kind == "refusal":
        return "refusal"
    if kind == "auth":  # no key, or the provider refused it: the editor's login
        raise auth_required(message or "the provider refused the credentials")
    data: dict[str, Any] = {"type": "RunFailed", "status": code}
    if kind is not None:
        data["kind"] = kind
    raise RequestError(-32603, message or f"the run ended with status {code}", data)
