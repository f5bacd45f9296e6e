"""How ACP traffic becomes oma-host results (PROTOCOL.md section 9).

Owns the client side of one ACP session as the agent sees it: ``session/update``
notifications checked against the schema (a plain text chunk, most of a turn's
traffic, by a shape test that accepts exactly what the schema would) and
turned into run events (:mod:`oma_host.core.events`), output text,
``toolCalls`` and per-run token usage; ``session/request_permission``
answered by the agent's permission policy (with ``ask-client``, a handler
that is an ``OptionPicker``, as the ACP door's is, picks among the agent's
own options; any other answers approve or reject); ``fs/*`` handed to
:mod:`bridges.acp.files`; ``terminal/*`` answered with method-not-found.
Typed updates are also shown to a watcher
(the session's choices, :mod:`bridges.acp.config_options`), and while a
``session/load`` replays history every update is dropped. The process, the
handshake and the run lifecycle live in :mod:`bridges.acp.session`.

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
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast, get_args

from acp import RequestError
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionNotification,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    WriteTextFileResponse,
)
from pydantic import BaseModel, ValidationError

from bridges.acp.files import AgentFiles
from oma_host.core.backends import OptionPicker, PermissionHandler
from oma_host.core.events import AcpPermission, AcpUpdate, AcpUpdateEvent
from oma_host.core.messages import ToolResultBlock, ToolUseBlock
from oma_host.core.results import RunRecorder, ToolCallRecord

log = logging.getLogger(__name__)

PermissionMode = Literal["auto-approve", "reject", "ask-client"]
T = TypeVar("T")
# Least privilege first: a one-off answer before a standing one.
_ALLOW_KINDS = ("allow_once", "allow_always")
_REJECT_KINDS = ("reject_once", "reject_always")
_FINAL_STATUSES = ("completed", "failed")
_HELD_UPDATES = 256  # updates between turns kept for the next run; the oldest go first
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


def choose_option(
    options: list[PermissionOption], approve: bool, *, always: bool = False
) -> PermissionOption | None:
    """The least-privileged option that approves (or rejects), if there is
    one; with ``always`` (the client said "always this session") the
    agent's ``allow_always`` option first."""
    kinds = _REJECT_KINDS if not approve else _ALLOW_KINDS[::-1] if always else _ALLOW_KINDS
    for kind in kinds:
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
        self._held: deque[AcpUpdateEvent] = deque(maxlen=_HELD_UPDATES)
        self.muted = False  # during session/load: the replayed history is no run's
        self.watch: Callable[[Any], None] | None = None  # sees each typed update (choices)
        self.files: AgentFiles | None = None  # serves fs/* (bridges.acp.files)

    @property
    def ask_s(self) -> float:
        """How long the client is given to answer a question."""
        return self._ask_timeout_s

    def files_for_turn(self, recorder: RunRecorder) -> None:
        """The ``fs/*`` calls of this turn report permission events to this run."""
        if self.files is not None:
            self.files.events = lambda data: recorder.event({"type": "permission", "data": data})

    def begin(self, turn: Turn) -> None:
        self.turn = turn
        self._cancelled.clear()
        while self._held:
            turn.recorder.event(self._held.popleft())

    def end(self, *, cancelled: bool = False) -> None:
        """Detach the turn; on cancel, pending permission requests are answered
        ``cancelled`` as ACP requires."""
        self.turn = None
        if cancelled:
            self._cancelled.set()

    # -- notifications and requests from the agent --------------------------

    def take_update(self, params: Any) -> None:
        """The params of one ``session/update``, in arrival order (the
        transport hands them over; the library's router never sees them). A
        kind the schema knows but whose fields it refuses is dropped, with a
        warning, as the library would drop it."""
        if self.muted:
            return
        turn = self.turn
        if turn is not None and (chunk := plain_text_chunk(params)) is not None:
            turn.on_text(*chunk)
            return
        update = params.get("update") if isinstance(params, dict) else None
        if isinstance(update, dict):
            kind = update.get("sessionUpdate")  # not a string (nor absent): the schema refuses it
            if (kind is None or isinstance(kind, str)) and kind not in KNOWN_UPDATES:
                self._unknown_update(update)
                return
        try:
            notification = SessionNotification.model_validate(params)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "params"
            log.warning(
                "ACP agent %r sent a session/update the schema refuses (%s: %s); dropped",
                self._agent_name,
                where,
                problem["msg"],
            )
            return
        self._typed_update(notification.update)

    def _typed_update(self, update: Any) -> None:
        if self.watch is not None:
            self.watch(update)
        if self.turn is not None:
            self.turn.on_update(update)
            return
        if isinstance(update, UsageUpdate):  # growth between runs belongs to no run
            self.usage.advance(update.used)
        self._held.append(update_event(wire(update)))

    def _unknown_update(self, raw: dict[str, Any]) -> None:
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
        option_kinds: list[str] = [option.kind for option in options]
        request = {
            "agentName": self._agent_name,
            "title": title,
            "kind": kind,
            "optionKinds": option_kinds,
        }
        picker: object = self._ask if self._mode == "ask-client" else None
        if isinstance(picker, OptionPicker):  # the client picks among the agent's own options
            option = await self._pick(picker, request, tool_call, options)
        else:
            approve = await self._decide(request)
            option = (
                None
                if approve is None
                else choose_option(options, approve is not False, always=approve == "session")
            )
        event: AcpPermission = {
            "title": title,
            "kind": kind,
            "optionKinds": option_kinds,
            "decision": "cancelled" if option is None else option.kind,
        }
        if option is None:
            outcome: AllowedOutcome | DeniedOutcome = DeniedOutcome(outcome="cancelled")
        else:
            event["optionId"] = option.option_id
            outcome = AllowedOutcome(outcome="selected", option_id=option.option_id)
        if turn is not None and self.turn is turn:
            turn.recorder.event({"type": "permission", "data": event})
        return RequestPermissionResponse(outcome=outcome)

    async def _decide(self, request: dict[str, Any]) -> bool | Literal["session"] | None:
        """True to approve, ``"session"`` to approve for the rest of the
        session, False to reject, None when the turn was cancelled."""
        if self._cancelled.is_set():
            return None
        if self._mode == "auto-approve":
            return True
        if self._mode == "reject" or self._ask is None:
            return False
        return await self._unless_cancelled(self._ask_client(request))

    async def _pick(
        self,
        picker: OptionPicker,
        request: dict[str, Any],
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
    ) -> PermissionOption | None:
        """The option the client picked, exactly as the agent offered it; None
        (cancelled) when the turn was cancelled, the client cancelled, failed,
        did not answer in time or named an option not offered."""
        if self._cancelled.is_set():
            return None
        chosen = await self._unless_cancelled(
            self._pick_in_time(picker, request, wire(tool_call), [wire(o) for o in options])
        )
        return next((option for option in options if option.option_id == chosen), None)

    async def _pick_in_time(
        self,
        picker: OptionPicker,
        request: dict[str, Any],
        tool_call: dict[str, Any],
        options: list[dict[str, Any]],
    ) -> str | None:
        try:
            async with asyncio.timeout(self._ask_timeout_s):
                return await picker.pick_option(request, tool_call, options)
        except Exception:
            return None

    async def _unless_cancelled(self, asked: Awaitable[T]) -> T | None:
        """What ``asked`` answers, or None when the turn is cancelled first."""
        asking = asyncio.ensure_future(asked)
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

    async def _ask_client(self, request: dict[str, Any]) -> bool | Literal["session"]:
        """The client's ``{approve: bool, scope?}`` (``"session"`` for an
        approval with ``scope: "session"``); no answer in time, an error or
        any other shape is a rejection."""
        assert self._ask is not None
        try:
            async with asyncio.timeout(self._ask_timeout_s):
                answer = await self._ask(request)
        except Exception:
            return False
        if not isinstance(answer, dict) or answer.get("approve") is not True:
            return False
        return "session" if answer.get("scope") == "session" else True

    # -- files: fs/read_text_file always, fs/write_text_file when allowed ----

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None, **_: Any
    ) -> ReadTextFileResponse:
        if self.files is None:
            raise RequestError.method_not_found("fs/read_text_file")
        return ReadTextFileResponse(content=await self.files.read(path, line, limit))

    async def write_text_file(self, path: str, content: str, **_: Any) -> WriteTextFileResponse:
        if self.files is None:
            raise RequestError.method_not_found("fs/write_text_file")
        await self.files.write(path, content, f"fs-write-{path}")
        return WriteTextFileResponse()

    # -- what oma-host does not serve: advertised as absent, refused if asked --

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
