"""How ACP traffic becomes oma-host results (PROTOCOL.md section 9).

Owns the client side of one ACP session as the agent sees it: ``session/update``
notifications turned into StreamEvents, output text, ``toolCalls`` and per-run
token usage; ``session/request_permission`` answered by the agent's permission
policy; and the client methods oma-host does not serve (``fs/*``,
``terminal/*``) answered with method-not-found. The process, the handshake and
the run lifecycle live in :mod:`bridges.acp.session`.

Event names a client sees on ``agent/stream`` besides ``text``:

- ``reasoning`` (data: the text) for ``agent_thought_chunk`` text;
- ``tool_use`` / ``tool_result`` for a tool call starting and finishing;
- ``permission`` (data: ``{title, kind, optionKinds, decision, optionId?}``)
  for each permission request and what was answered;
- ``acp_update`` (data: ``{kind, ...}``, the update's own camelCase fields,
  ``kind`` being its ``sessionUpdate``) for everything else: plans, mode and
  command changes, ``usage_update``, intermediate ``tool_call_update``
  notifications, non-text content chunks, and update kinds this build does
  not know.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
)
from pydantic import BaseModel

from oma_host.core.backends import PermissionHandler
from oma_host.core.results import RunRecorder, ToolCallRecord

PermissionMode = Literal["auto-approve", "reject", "ask-client"]
# Least privilege first: a one-off answer before a standing one.
_ALLOW_KINDS = ("allow_once", "allow_always")
_REJECT_KINDS = ("reject_once", "reject_always")
_FINAL_STATUSES = ("completed", "failed")
_HELD_UPDATES = 256  # updates between turns kept for the next run; the oldest go first


def wire(model: BaseModel) -> dict[str, Any]:
    """A schema model as it travels on the wire (camelCase, no nulls)."""
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def update_event(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``acp_update`` payload for a ``session/update`` body."""
    body = {key: value for key, value in raw.items() if key != "sessionUpdate"}
    return {"kind": raw.get("sessionUpdate", "unknown"), **body}


def choose_option(options: list[PermissionOption], approve: bool) -> PermissionOption | None:
    """The least-privileged option that approves (or rejects), if there is one."""
    for kind in _ALLOW_KINDS if approve else _REJECT_KINDS:
        for option in options:
            if option.kind == kind:
                return option
    return None


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

    def on_update(self, update: Any) -> None:
        """Apply one typed ``session/update``. Runs without awaiting, so
        updates are applied in the order the agent sent them."""
        recorder = self.recorder
        if isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContentBlock):
            recorder.text(update.content.text)
        elif isinstance(update, AgentThoughtChunk) and isinstance(update.content, TextContentBlock):
            recorder.event("reasoning", update.content.text)
        elif isinstance(update, ToolCallStart):
            self._start(update)
        elif isinstance(update, ToolCallProgress):
            self._progress(update)
        else:
            if isinstance(update, UsageUpdate):
                recorder.add_usage(input_tokens=self._usage.advance(update.used))
            recorder.event("acp_update", update_event(wire(update)))

    def on_unknown(self, raw: dict[str, Any]) -> None:
        """An update kind the schema does not know: streamed, never dropped."""
        self.recorder.event("acp_update", update_event(raw))

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
        self.recorder.event(
            "tool_use",
            {"type": "tool_use", "id": call.call_id, "name": call.title, "input": call.input},
        )
        if call.status in _FINAL_STATUSES:
            self._finish(call)

    def _progress(self, update: ToolCallProgress) -> None:
        call = self._calls.get(update.tool_call_id)
        if call is None:  # an update for a call we never saw start: track it from here
            title = update.title or update.kind or "tool"
            call = _ToolCall(update.tool_call_id, title, update.kind, {}, None, None, None)
            self._calls[call.call_id] = call
        if call.status in _FINAL_STATUSES:
            self.recorder.event("acp_update", update_event(wire(update)))
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
            self.recorder.event("acp_update", update_event(wire(update)))

    def _finish(self, call: _ToolCall) -> None:
        output = _tool_output(call)
        record: ToolCallRecord = {
            "toolName": call.title,
            "input": call.input,
            "output": output,
            "duration": round((time.monotonic() - call.started) * 1000, 3),
        }
        self.recorder.tool_calls.append(record)
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.call_id}
        result["content"] = output
        if call.status == "failed":
            result["is_error"] = True
        self.recorder.event("tool_result", result)

    def finish(self) -> None:
        """The turn ended: tool calls that never reported an end are recorded
        as they stand, so none is lost."""
        for call in self._calls.values():
            if call.status not in _FINAL_STATUSES:
                call.status = "unfinished"
                self._finish(call)


class BridgeClient:
    """The ACP ``Client`` oma-host presents to one agent process.

    Updates go to the current :class:`Turn`. Those that arrive between turns
    (announcements after ``session/new``, the last words of a cancelled turn)
    are held and streamed at the start of the next run as ``acp_update``
    events, never as its text, tool calls or usage. Permission requests follow
    the policy.
    """

    def __init__(
        self,
        agent_name: str,
        mode: PermissionMode,
        ask: PermissionHandler | None,
        ask_timeout_s: float,
    ) -> None:
        self._agent_name = agent_name
        self._mode = mode
        self._ask = ask
        self._ask_timeout_s = ask_timeout_s
        self.turn: Turn | None = None
        self.usage = UsageMeter()  # the session's, across turns
        self._cancelled = asyncio.Event()
        self._held: deque[dict[str, Any]] = deque(maxlen=_HELD_UPDATES)

    def begin(self, turn: Turn) -> None:
        self.turn = turn
        self._cancelled.clear()
        while self._held:
            turn.recorder.event("acp_update", self._held.popleft())

    def end(self, *, cancelled: bool = False) -> None:
        """Detach the turn; on cancel, pending permission requests are answered
        ``cancelled`` as ACP requires."""
        self.turn = None
        if cancelled:
            self._cancelled.set()

    # -- notifications and requests from the agent --------------------------

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        if self.turn is not None:
            self.turn.on_update(update)
            return
        if isinstance(update, UsageUpdate):  # growth between runs belongs to no run
            self.usage.advance(update.used)
        self._held.append(update_event(wire(update)))

    def unknown_update(self, raw: dict[str, Any]) -> None:
        if self.turn is not None:
            self.turn.on_unknown(raw)
        else:
            self._held.append(update_event(raw))

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **_: Any,
    ) -> RequestPermissionResponse:
        turn = self.turn
        seen_title, seen_kind = turn.describe(tool_call.tool_call_id) if turn else ("", None)
        title = tool_call.title or seen_title
        kind = tool_call.kind or seen_kind
        request = {
            "agentName": self._agent_name,
            "title": title,
            "kind": kind,
            "optionKinds": [option.kind for option in options],
        }
        approve = await self._decide(request)
        option = None if approve is None else choose_option(options, approve)
        event: dict[str, Any] = {
            "title": title,
            "kind": kind,
            "optionKinds": request["optionKinds"],
        }
        if option is None:
            event["decision"] = "cancelled"
            outcome: AllowedOutcome | DeniedOutcome = DeniedOutcome(outcome="cancelled")
        else:
            event["decision"] = option.kind
            event["optionId"] = option.option_id
            outcome = AllowedOutcome(outcome="selected", option_id=option.option_id)
        if turn is not None and self.turn is turn:
            turn.recorder.event("permission", event)
        return RequestPermissionResponse(outcome=outcome)

    async def _decide(self, request: dict[str, Any]) -> bool | None:
        """True to approve, False to reject, None when the turn was cancelled."""
        if self._cancelled.is_set():
            return None
        if self._mode == "auto-approve":
            return True
        if self._mode == "reject" or self._ask is None:
            return False
        asking = asyncio.ensure_future(self._ask_client(request))
        cancelled = asyncio.ensure_future(self._cancelled.wait())
        try:
            await asyncio.wait({asking, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            if not asking.done():
                asking.cancel()
        if not asking.done() or asking.cancelled():
            return None
        return asking.result()

    async def _ask_client(self, request: dict[str, Any]) -> bool:
        """The client's ``{approve: bool}``; no answer in time, an error or any
        other shape is a rejection."""
        assert self._ask is not None
        try:
            async with asyncio.timeout(self._ask_timeout_s):
                answer = await self._ask(request)
        except Exception:
            return False
        return isinstance(answer, dict) and answer.get("approve") is True

    # -- what oma-host does not serve: advertised as absent, refused if asked --

    async def read_text_file(self, **_: Any) -> Any:
        raise RequestError.method_not_found("fs/read_text_file")

    async def write_text_file(self, **_: Any) -> Any:
        raise RequestError.method_not_found("fs/write_text_file")

    async def create_terminal(self, **_: Any) -> Any:
        raise RequestError.method_not_found("terminal/create")

    async def terminal_output(self, **_: Any) -> Any:
        raise RequestError.method_not_found("terminal/output")

    async def release_terminal(self, **_: Any) -> Any:
        raise RequestError.method_not_found("terminal/release")

    async def wait_for_terminal_exit(self, **_: Any) -> Any:
        raise RequestError.method_not_found("terminal/wait_for_exit")

    async def kill_terminal(self, **_: Any) -> Any:
        raise RequestError.method_not_found("terminal/kill")
