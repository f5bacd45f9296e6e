"""The editor as the door calls it, over :class:`.wire.AcpWire`: the turn's
``session/update`` notifications, and the requests a turn may make of the
editor (``session/request_permission``, ``fs/read_text_file``,
``fs/write_text_file``).

Updates arrive here in their wire form (built by :mod:`.updates`) and are
written at once, in order. The requests are rare and are made as the
library's ``AgentSideConnection`` made them: their params built as the
schema's request models and dumped, the editor's answer validated with the
response model (an answer the schema refuses raises ``ValidationError`` in
the turn, as it did).
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    PermissionOption,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from oma_host.acp_server.wire import AcpWire


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

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
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
        answer = await self._wire.request("session/request_permission", request_params(request))
        return RequestPermissionResponse.model_validate(answer)

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse:
        request = ReadTextFileRequest(session_id=session_id, path=path)
        answer = await self._wire.request("fs/read_text_file", request_params(request))
        return ReadTextFileResponse.model_validate(answer)

    async def write_text_file(
        self, session_id: str, path: str, content: str
    ) -> WriteTextFileResponse | None:
        """The editor's answer; None when it is not an object (the schema's
        answer is an empty one, which editors may leave out)."""
        request = WriteTextFileRequest(session_id=session_id, path=path, content=content)
        answer = await self._wire.request("fs/write_text_file", request_params(request))
        return WriteTextFileResponse.model_validate(answer) if isinstance(answer, dict) else None
