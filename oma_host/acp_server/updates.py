"""A turn's StreamEvents as ACP ``session/update`` notifications, and its
result as a ``session/prompt`` answer.

- ``text`` -> ``agent_message_chunk``; ``reasoning`` -> ``agent_thought_chunk``;
- ``tool_use`` -> ``tool_call`` (``kind`` read for ``file_read``, search for
  ``grep`` and ``glob``, with ``locations``); ``tool_result`` ->
  ``tool_call_update`` with the status and the output as content;
- ``acp_update`` (a wrapped ACP agent's own update) -> that update, unchanged;
- ``permission`` and ``error`` send nothing: the first was the permission
  request itself, the second is in the answer to ``session/prompt``;
  ``mcp_filtered`` (an editor's MCP server a wrapped ACP agent cannot take)
  has no ACP form and is logged.

The agent emits events synchronously; :class:`UpdateSender` queues them and
sends them in order, and the prompt is answered only once the queue is empty.
Stop reasons: ``end_turn``; ``max_tokens`` for the token budget;
``max_turn_requests`` for ``maxTurns``; ``refusal``; ``cancelled``. A run
that failed otherwise is answered with an ACP error carrying its status.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    ContentToolCallContent,
    SessionNotification,
    TextContentBlock,
    ToolCallLocation,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
)
from pydantic import ValidationError

from oma_host.core.messages import ContentBlock
from oma_host.core.results import (
    MAX_TURN_REQUESTS_KIND,
    AgentRunResult,
    StreamEvent,
    ended_at_turn_limit,
)

log = logging.getLogger(__name__)

SessionUpdate = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | UsageUpdate
)
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

# The context size reported in usage_update when the config sets no budget:
# providers do not report their context windows.
NOMINAL_CONTEXT_SIZE = 200_000

_TOOL_KINDS = {"file_read": "read", "grep": "search", "glob": "search"}


class UpdateSink(Protocol):
    """The part of the ACP connection that sends session updates."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None: ...


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _locations(name: str, tool_input: Mapping[str, Any], cwd: str) -> list[ToolCallLocation]:
    if name not in _TOOL_KINDS:
        return []
    relative = tool_input.get("path")
    target = Path(cwd) / relative if isinstance(relative, str) and relative else Path(cwd)
    return [ToolCallLocation(path=str(target))]


def tool_use_update(block: ContentBlock, cwd: str) -> ToolCallStart:
    """``tool_call`` for a tool_use block (the model asked for a tool)."""
    name = str(block.get("name", "tool"))
    given = block.get("input")
    tool_input: dict[str, Any] = given if isinstance(given, dict) else {}
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=str(block.get("id", "")),
        title=name,
        kind=_TOOL_KINDS.get(name, "other"),  # type: ignore[arg-type]
        status="in_progress",
        locations=_locations(name, tool_input, cwd) or None,
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


def _passed_through(data: Mapping[str, Any]) -> Any:
    """A wrapped ACP agent's update as it sent it (the bridge keeps its
    camelCase fields, with ``sessionUpdate`` renamed ``kind``)."""
    raw = {key: value for key, value in data.items() if key != "kind"}
    raw["sessionUpdate"] = data.get("kind")
    return SessionNotification.model_validate({"sessionId": "-", "update": raw}).update


def event_update(event: StreamEvent, cwd: str) -> Any | None:
    """The ACP update for one StreamEvent, or None when it has none."""
    kind, data = event["type"], event["data"]
    if kind == "text":
        return AgentMessageChunk(session_update="agent_message_chunk", content=_text(data))
    if kind == "reasoning":
        return AgentThoughtChunk(session_update="agent_thought_chunk", content=_text(data))
    if kind == "tool_use":
        return tool_use_update(data, cwd)
    if kind == "tool_result":
        return tool_result_update(data)
    if kind == "acp_update":
        try:
            return _passed_through(data)
        except ValidationError:
            log.warning("an update of kind %r has no ACP form here; not sent", data.get("kind"))
            return None
    if kind == "mcp_filtered":
        log.warning(
            "MCP server %r was not passed to the ACP agent: %s",
            data.get("name"),
            data.get("reason"),
        )
        return None
    if kind not in ("permission", "error"):
        log.warning("a %r event has no ACP form; not sent", kind)
    return None


class UpdateSender:
    """Sends one session's updates in the order they were emitted."""

    def __init__(self, sink: UpdateSink, session_id: str, cwd: str) -> None:
        self._sink = sink
        self._session_id = session_id
        self._cwd = cwd
        self._queue: asyncio.Queue[Any | None] = asyncio.Queue()
        self._pump = asyncio.ensure_future(self._send_all())

    def emit(self, event: StreamEvent) -> None:
        update = event_update(event, self._cwd)
        if update is not None:
            self._queue.put_nowait(update)

    def send(self, update: Any) -> None:
        self._queue.put_nowait(update)

    async def close(self) -> None:
        """Send what is queued, then stop."""
        self._queue.put_nowait(None)
        await self._pump

    async def _send_all(self) -> None:
        while (update := await self._queue.get()) is not None:
            try:
                await self._sink.session_update(self._session_id, update)
            except ConnectionError:  # the editor is gone; the turn still completes
                log.info("session %s: the client left; updates not sent", self._session_id)


def usage_update(result: AgentRunResult, budget: int | None) -> UsageUpdate:
    """The context the turn used, as ``usage_update`` reports it."""
    usage = result["tokenUsage"]
    used = usage["input_tokens"] + usage["output_tokens"]
    return UsageUpdate(
        session_update="usage_update", used=used, size=max(budget or NOMINAL_CONTEXT_SIZE, used)
    )


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
    data: dict[str, Any] = {"type": "RunFailed", "status": code}
    if kind is not None:
        data["kind"] = kind
    raise RequestError(-32603, message or f"the run ended with status {code}", data)
