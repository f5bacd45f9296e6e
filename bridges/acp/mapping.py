"""How an ACP turn's ``session/update`` traffic becomes oma-host events and results.

Updates become run events, output text, ``toolCalls`` and token usage; what has
no event of its own (plans, mode changes, unknown kinds) is streamed as
``acp_update`` with its own fields, so nothing is lost. docs/protocol.md,
"External backends".
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, cast, get_args

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    UsageUpdate,
)
from pydantic import BaseModel

from oma_host.core.events import AcpUpdate, AcpUpdateEvent
from oma_host.core.messages import ToolResultBlock, ToolUseBlock
from oma_host.core.recorder import RunRecorder
from oma_host.core.results import ToolCallRecord

log = logging.getLogger(__name__)

_FINAL_STATUSES: tuple[ToolCallStatus, ...] = ("completed", "failed")
# What update_event takes out of an update: its sessionUpdate, renamed kind.
_RENAMED = ("sessionUpdate", "kind")
# The text chunks and the stream each feeds: output text, or reasoning events.
_TEXT_CHUNKS = {"agent_message_chunk": "text", "agent_thought_chunk": "reasoning"}


def _known_update_kinds() -> frozenset[str]:
    """Every ``sessionUpdate`` the library's schema can parse."""
    union = SessionNotification.model_fields["update"].annotation
    return frozenset(
        get_args(model.model_fields["session_update"].annotation)[0] for model in get_args(union)
    )


KNOWN_UPDATES = _known_update_kinds()


def plain_text_chunk(params: Any) -> tuple[str, str] | None:
    """``(sessionUpdate, text)`` when ``session/update`` params are a text
    chunk with no optional field (``{"sessionId", "update": {"sessionUpdate",
    "content": {"type": "text", "text"}}}``), else None. The schema accepts
    every such shape and reads the same text from it, so this stands in for
    validating the ones it takes; every other shape goes to the schema."""
    if type(params) is not dict or len(params) != 2 or type(params.get("sessionId")) is not str:
        return None
    update = params.get("update")
    if type(update) is not dict or len(update) != 2:
        return None
    kind = update.get("sessionUpdate")
    content = update.get("content")
    if type(kind) is not str or kind not in _TEXT_CHUNKS:
        return None
    if type(content) is not dict or len(content) != 2:
        return None
    text = content.get("text")
    if content.get("type") != "text" or type(text) is not str:
        return None
    return kind, text


def wire(model: BaseModel) -> dict[str, Any]:
    """A schema model as it travels on the wire (camelCase, no nulls)."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def update_event(raw: dict[str, Any]) -> AcpUpdateEvent:
    """The ``acp_update`` event for a ``session/update`` body: ``kind`` is
    always its ``sessionUpdate``, so a tool call update's own ``kind`` (the
    tool's, which the turn keeps on its call) is left out rather than taking
    its place."""
    body = {key: value for key, value in raw.items() if key not in _RENAMED}
    # The update's own fields besides ``kind``, which AcpUpdate cannot list.
    data = cast(AcpUpdate, {"kind": raw.get("sessionUpdate", "unknown"), **body})
    return {"type": "acp_update", "data": data}


@dataclass
class UsageMeter:
    """The session's last ``usage_update.used``: ACP reports the context size
    so far, cumulatively, and a run's usage is how much it grew."""

    used: int = 0

    def advance(self, used: int) -> int:
        # A shrinking context (the agent compacted it) costs this run nothing.
        grown = max(0, used - self.used)
        self.used = used
        return grown


@dataclass
class _ToolCall:
    call_id: str
    title: str
    kind: str | None
    input: dict[str, Any]
    status: str | None
    content: list[Any] | None
    raw_output: Any
    started: float = field(default_factory=time.monotonic)


def _as_input(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    return {"value": raw}


def _content_text(item: Any) -> str:
    kind = getattr(item, "type", None)
    if kind == "content":
        block = item.content
        if isinstance(block, TextContentBlock):
            return block.text
        return f"[{block.type}]"
    if kind == "diff":
        return f"[diff {item.path}]"
    if kind == "terminal":
        return f"[terminal {item.terminal_id}]"
    return f"[{kind}]"


def _tool_output(call: _ToolCall) -> str:
    """The tool's output as text: its content, else its raw output."""
    if call.content:
        return "\n".join(_content_text(item) for item in call.content)
    if call.raw_output is None:
        return ""
    if isinstance(call.raw_output, str):
        return call.raw_output
    return json.dumps(call.raw_output)


class Turn:
    """One run's view of the session while its ``session/prompt`` is in flight."""

    def __init__(self, recorder: RunRecorder, usage: UsageMeter) -> None:
        self.recorder = recorder
        self._usage = usage
        self._calls: dict[str, _ToolCall] = {}

    def describe(self, call_id: str) -> tuple[str, str | None]:
        """The title and kind of a tool call this turn has seen start."""
        call = self._calls.get(call_id)
        return (call.title, call.kind) if call else ("", None)

    def on_text(self, kind: str, text: str) -> None:
        """Apply a plain text chunk (see :func:`plain_text_chunk`)."""
        if _TEXT_CHUNKS[kind] == "text":
            self.recorder.text(text)
        else:
            self.recorder.reasoning(text)

    def on_update(self, update: Any) -> None:
        """Apply one typed ``session/update``. Runs without awaiting, so
        updates are applied in the order the agent sent them."""
        recorder = self.recorder
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            recorder.text(update.content.text)
        elif isinstance(update, AgentThoughtChunk) and isinstance(update.content, TextContentBlock):
            recorder.reasoning(update.content.text)
        elif isinstance(update, ToolCallStart):
            self._start(update)
        elif isinstance(update, ToolCallProgress):
            self._progress(update)
        else:
            if isinstance(update, UsageUpdate):
                recorder.add_usage(input_tokens=self._usage.advance(update.used))
            recorder.event(update_event(wire(update)))

    def on_unknown(self, raw: dict[str, Any]) -> None:
        """An update kind the schema does not know: streamed, never dropped."""
        self.recorder.event(update_event(raw))

    def _start(self, update: ToolCallStart) -> None:
        call = _ToolCall(
            update.tool_call_id,
            update.title,
            update.kind,
            _as_input(update.raw_input),
            update.status,
            update.content,
            update.raw_output,
        )
        self._calls[call.call_id] = call
        block: ToolUseBlock = {
            "type": "tool_use",
            "id": call.call_id,
            "name": call.title,
            "input": call.input,
        }
        self.recorder.event({"type": "tool_use", "data": block})
        if call.status in _FINAL_STATUSES:
            self._finish(call)

    def _progress(self, update: ToolCallProgress) -> None:
        call = self._calls.get(update.tool_call_id)
        if call is None:  # an update for a call we never saw start: track it from here
            title = update.title or update.kind or "tool"
            call = _ToolCall(update.tool_call_id, title, update.kind, {}, None, None, None)
            self._calls[call.call_id] = call
        if call.status in _FINAL_STATUSES:
            self.recorder.event(update_event(wire(update)))
            return
        if update.title:
            call.title = update.title
        if update.kind is not None:
            call.kind = update.kind
        if update.raw_input is not None:
            call.input = _as_input(update.raw_input)
        if update.content is not None:
            call.content = update.content
        if update.raw_output is not None:
            call.raw_output = update.raw_output
        if update.status is not None:
            call.status = update.status
        if call.status in _FINAL_STATUSES:
            self._finish(call)
        else:
            self.recorder.event(update_event(wire(update)))

    def _finish(self, call: _ToolCall) -> None:
        output = _tool_output(call)
        record: ToolCallRecord = {
            "toolName": call.title,
            "input": call.input,
            "output": output,
            "duration": round((time.monotonic() - call.started) * 1000, 3),
        }
        self.recorder.tool_calls.append(record)
        result: ToolResultBlock = {
            "type": "tool_result",
            "tool_use_id": call.call_id,
            "content": output,
        }
        if call.status == "failed":
            result["is_error"] = True
        self.recorder.event({"type": "tool_result", "data": result})

    def finish(self) -> None:
        """The turn ended: tool calls that never reported an end are recorded
        as they stand, so none is lost."""
        for call in self._calls.values():
            if call.status not in _FINAL_STATUSES:
                call.status = "unfinished"
                self._finish(call)
