"""The ACP ``Client`` oma-host presents to one agent process.

Updates go to the running turn, checked against the schema (a plain text chunk
by a shape test that accepts exactly what the schema would); those between
turns wait for the next run, and a ``session/load`` replay is dropped.
Permission requests go through the agent's permission policy, ``fs/*`` to
:mod:`oma_host.bridges.acp.files`; ``terminal/*`` is method-not-found.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from acp import RequestError
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    PermissionOptionKind,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionNotification,
    ToolCallUpdate,
    UsageUpdate,
    WriteTextFileResponse,
)
from pydantic import ValidationError

from oma_host.bridges.acp.files import AgentFiles
from oma_host.bridges.acp.mapping import (
    KNOWN_UPDATES,
    Turn,
    UsageMeter,
    plain_text_chunk,
    update_event,
    wire,
)
from oma_host.core.backends import OptionPicker, PermissionHandler
from oma_host.core.config import AcpPermissionMode
from oma_host.core.events import AcpPermission, AcpUpdateEvent
from oma_host.core.recorder import RunRecorder

log = logging.getLogger(__name__)

T = TypeVar("T")
# Least privilege first: a one-off answer before a standing one.
_ALLOW_KINDS: tuple[PermissionOptionKind, ...] = ("allow_once", "allow_always")
_REJECT_KINDS: tuple[PermissionOptionKind, ...] = ("reject_once", "reject_always")
_HELD_UPDATES = 256  # updates between turns kept for the next run; the oldest go first


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
        mode: AcpPermissionMode,
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
        self.files: AgentFiles | None = None  # serves fs/* (oma_host.bridges.acp.files)

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
