"""The editor as the door calls it: ``session/update`` notifications and the turn's requests.

Updates arrive in wire form and are written at once, in order. The rare
requests (permission, files, terminals) are built and their answers validated
with the schema's models; ``elicitation/create`` is built as the TypedDict
generated from the v1 schema (:mod:`.wire_v1`), since the library's model
would rewrite the MCP server's ``requestedSchema`` the door relays.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from acp import RequestError
from acp.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    EnvVariable,
    KillTerminalRequest,
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from oma_host.acp_server.wire import AcpWire
from oma_host.acp_server.wire_v1 import (
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationSchema,
)
from oma_host.core.editor_channel import TerminalExit, TerminalOutput
from oma_host.core.spans import current_span, traceparent_of

# The most of an editor's reason a tool result carries.
REASON_CHARS = 500
# Where an error's ``data`` says why, first found first.
_REASON_FIELDS = ("details", "message", "reason")


class EditorRefused(Exception):
    """The editor answered a request with an error; the message says what it said."""


def _reason(data: Any) -> str | None:
    """The reason an error's ``data`` gives: a string, or an object's
    ``details``, ``message`` or ``reason``."""
    if isinstance(data, dict):
        data = next((data[key] for key in _REASON_FIELDS if isinstance(data.get(key), str)), None)
    if isinstance(data, str) and data.strip():
        return data
    return None


def editor_said(error: RequestError) -> str:
    """An editor's error answer on one line: its message and code, then the
    reason its ``data`` gives when the message does not hold it already
    ("Internal error (-32603): Permission denied for fs/write_text_file"),
    at most :data:`REASON_CHARS` characters."""
    message = " ".join(str(error).split()) or "an error"
    said = f"{message} ({error.code})"
    reason = _reason(error.data)
    if reason is not None:
        reason = re.sub(r"\s+", " ", reason).strip()
        if reason not in message:
            said += f": {reason}"
    return said if len(said) <= REASON_CHARS else said[: REASON_CHARS - 1] + "…"


def request_params(model: BaseModel) -> dict[str, Any]:
    """A request model's params, dumped as the library dumps them."""
    dumped: dict[str, Any] = model.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
    )
    return dumped


class EditorClient:
    """What the door sends to the editor; see the module docstring."""

    def __init__(self, wire: AcpWire) -> None:
        self._wire = wire

    async def _request(self, method: str, params: Mapping[str, Any]) -> Any:
        """A request to the editor; made inside a recorded run, its
        ``_meta.traceparent`` names the run's current span."""
        span = current_span()
        if span is not None:
            meta = params.get("_meta")
            params = {**params, "_meta": {**(meta or {}), "traceparent": traceparent_of(span)}}
        return await self._wire.request(method, params)

    async def _ask(self, method: str, params: Mapping[str, Any]) -> Any:
        """A file or terminal request; EditorRefused for an error answer."""
        try:
            return await self._request(method, params)
        except RequestError as error:
            raise EditorRefused(editor_said(error)) from None

    def send_update(self, session_id: str, update: Mapping[str, Any]) -> None:
        """Write one ``session/update`` now; ConnectionError once the editor has gone."""
        self._wire.notify("session/update", {"sessionId": session_id, "update": update})

    async def drain(self) -> None:
        await self._wire.drain()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        request = RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=options
        )
        answer = await self._request("session/request_permission", request_params(request))
        return RequestPermissionResponse.model_validate(answer)

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse:
        request = ReadTextFileRequest(session_id=session_id, path=path)
        answer = await self._ask("fs/read_text_file", request_params(request))
        return ReadTextFileResponse.model_validate(answer)

    async def elicit(
        self, session_id: str, message: str, schema: ElicitationSchema
    ) -> CreateElicitationResponse:
        """A form elicitation (``elicitation/create``, form mode) tied to the
        session; the editor's answer, or ``cancel`` for one that is not an
        action the schema knows."""
        params: CreateElicitationRequest = {
            "sessionId": session_id,
            "mode": "form",
            "message": message,
            "requestedSchema": schema,
        }
        answer = await self._ask("elicitation/create", params)
        action = answer.get("action") if isinstance(answer, dict) else None
        if action == "accept":
            content = answer.get("content")
            return {"action": "accept", "content": content if isinstance(content, dict) else {}}
        if action == "decline":
            return {"action": "decline"}
        return {"action": "cancel"}

    async def write_text_file(
        self, session_id: str, path: str, content: str
    ) -> WriteTextFileResponse | None:
        """The editor's answer; None when it is not an object (the schema's
        answer is an empty one, which editors may leave out)."""
        request = WriteTextFileRequest(session_id=session_id, path=path, content=content)
        answer = await self._ask("fs/write_text_file", request_params(request))
        return WriteTextFileResponse.model_validate(answer) if isinstance(answer, dict) else None

    async def terminal_request(self, method: str, request: BaseModel) -> Any:
        """One ``terminal/*`` request; the editor's answer as it came."""
        return await self._ask(method, request_params(request))


def _exit(status: TerminalExitStatus | WaitForTerminalExitResponse) -> TerminalExit:
    return TerminalExit(status.exit_code, status.signal)


class SessionTerminals:
    """One session's commands in the editor's terminals (the core's
    :class:`~oma_host.core.editor_channel.EditorTerminal`), for an editor
    that advertised ``terminal``."""

    def __init__(self, editor: EditorClient, session_id: str) -> None:
        self._editor = editor
        self._session_id = session_id

    async def create(
        self,
        command: str,
        args: list[str],
        cwd: str,
        env: dict[str, str],
        output_byte_limit: int,
    ) -> str:
        request = CreateTerminalRequest(
            session_id=self._session_id,
            command=command,
            args=args,
            cwd=cwd,
            env=[EnvVariable(name=name, value=value) for name, value in env.items()],
            output_byte_limit=output_byte_limit,
        )
        answer = await self._editor.terminal_request("terminal/create", request)
        return CreateTerminalResponse.model_validate(answer).terminal_id

    async def wait_for_exit(self, terminal_id: str) -> TerminalExit:
        request = WaitForTerminalExitRequest(session_id=self._session_id, terminal_id=terminal_id)
        answer = await self._editor.terminal_request("terminal/wait_for_exit", request)
        return _exit(WaitForTerminalExitResponse.model_validate(answer))

    async def output(self, terminal_id: str) -> TerminalOutput:
        request = TerminalOutputRequest(session_id=self._session_id, terminal_id=terminal_id)
        answer = await self._editor.terminal_request("terminal/output", request)
        output = TerminalOutputResponse.model_validate(answer)
        ended = None if output.exit_status is None else _exit(output.exit_status)
        return TerminalOutput(output.output, output.truncated, ended)

    async def kill(self, terminal_id: str) -> None:
        request = KillTerminalRequest(session_id=self._session_id, terminal_id=terminal_id)
        await self._editor.terminal_request("terminal/kill", request)

    async def release(self, terminal_id: str) -> None:
        request = ReleaseTerminalRequest(session_id=self._session_id, terminal_id=terminal_id)
        await self._editor.terminal_request("terminal/release", request)
