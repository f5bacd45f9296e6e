"""An agent's MCP servers (``config.mcpServers``), on the official ``mcp`` SDK.

Imported, with the SDK, only when an agent has servers. They start on the
agent's first run and end when its backend closes; each connection is owned by
one task because anyio wants its context managers entered and left in the same
task. Tools are offered as ``SERVER__TOOL``, cut to ``[a-zA-Z0-9_-]`` and 64
characters (:func:`offered_name`). A server that fails raises
:class:`McpFailure` and fails the run; a tool's error is an error result to the
model.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from oma_host.core.config import McpServer, McpServerHttp
from oma_host.core.editor_channel import Elicitor
from oma_host.core.redact import Redactor
from oma_host.core.tools import ToolDeclaration
from oma_host.llm.mcp_errors import McpFailure
from oma_host.llm.mcp_stdio import ServerProcess, stdio_transport
from oma_host.llm.tools.base import ToolOutput, Workspace
from oma_host.workspace.permissions import undeclared_tool

log = logging.getLogger("oma_host.llm")

TOOL_NAME_LIMIT = 64  # the providers' limit on a tool name
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
START_TIMEOUT_S = 60.0  # npx may fetch a package on a first start
_PING_TIMEOUT_S = 10.0
_STDERR_TAIL_CHARS = 2000  # of it in a failure message


def offered_name(server: str, tool: str, taken: set[str]) -> str:
    """The name the model sees for ``tool`` of ``server`` (see the module doc)."""
    name = f"{_UNSAFE.sub('_', server)}__{_UNSAFE.sub('_', tool)}"
    if len(name) <= TOOL_NAME_LIMIT and name not in taken:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: TOOL_NAME_LIMIT - 9]}_{digest}"


@dataclass(frozen=True)
class McpTool:
    """One tool of one server, as offered to the model: a
    :class:`oma_host.llm.tools.base.Tool` declared from the server's listing
    (:func:`oma_host.workspace.permissions.undeclared_tool`: the host cannot tell
    what it does)."""

    declaration: ToolDeclaration
    server: McpConnection
    name: str  # the server's own name for it

    async def call(
        self, arguments: dict[str, Any], workspace: Workspace
    ) -> tuple[ToolOutput, bool]:
        """Call it on the server (McpFailure when the server is gone)."""
        return await self.server.call(self.name, arguments)


def _part(block: Any) -> dict[str, Any]:
    """One MCP content block as a tool_result part (text, image or file)."""
    if isinstance(block, types.TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, types.ImageContent):
        source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
        return {"type": "image", "source": source}
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return {"type": "text", "text": f"[resource {resource.uri}]\n{resource.text}"}
        mime = resource.mime_type or "application/octet-stream"
        source = {"type": "base64", "media_type": mime, "data": resource.blob}
        if mime.startswith("image/"):
            return {"type": "image", "source": source}
        filename = str(resource.uri).rstrip("/").rsplit("/", 1)[-1] or str(resource.uri)
        return {"type": "file", "filename": filename, "source": source}
    if isinstance(block, types.ResourceLink):
        return {"type": "text", "text": f"[resource link {block.name}: {block.uri}]"}
    if isinstance(block, types.AudioContent):
        return {
            "type": "text",
            "text": f"[audio ({block.mime_type}) left out: no provider reads it]",
        }
    return {"type": "text", "text": f"[{getattr(block, 'type', 'unknown')} content left out]"}


def tool_output(result: types.CallToolResult) -> tuple[ToolOutput, bool]:
    """A tool's result as tool_result content: a string when it is all text
    (and always for an error, which the providers take as text only), else
    the parts with images and resources kept."""
    parts = [_part(block) for block in result.content]
    if not parts and result.structured_content is not None:
        import json

        parts = [{"type": "text", "text": json.dumps(result.structured_content)}]
    texts = [part["text"] for part in parts if part["type"] == "text"]
    if result.is_error or len(texts) == len(parts):
        return ("\n".join(texts) or ("the tool failed" if result.is_error else "")), result.is_error
    return parts, False


class McpConnection:
    """One server: its owner task, its session once started, its stderr."""

    def __init__(
        self, config: McpServer, cwd: str, redactor: Redactor, *, elicit: Elicitor | None = None
    ) -> None:
        self.config = config
        self.name = config.name
        self._cwd = cwd
        self._redactor = redactor
        # The editor's forms; without them every question is declined.
        self._elicit = elicit
        self._process: ServerProcess | None = None
        self._session: ClientSession | None = None
        self._ready: asyncio.Future[list[types.Tool]] | None = None
        self._closing = asyncio.Event()
        self._owner: asyncio.Task[None] | None = None

    # -- failure ----------------------------------------------------------------

    def stderr_tail(self) -> str:
        """The end of what the server wrote to stderr, secrets taken out."""
        if self._process is None:
            return ""
        tail = self._process.stderr_tail()[-_STDERR_TAIL_CHARS:]
        return self._redactor.redact(tail.strip())

    def failure(self, what: str) -> McpFailure:
        message = f"MCP server {self.name!r} {what}"
        tail = self.stderr_tail()
        if tail:
            message += f"; its stderr ends with:\n{tail}"
        return McpFailure(self._redactor.redact(message))

    # -- life ------------------------------------------------------------------

    async def start(self) -> list[types.Tool]:
        """Start the server and list its tools (once; later calls get the same)."""
        if self._ready is None:
            self._ready = asyncio.get_running_loop().create_future()
            self._owner = asyncio.create_task(self._own(self._ready), name=f"mcp {self.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT_S)
        except TimeoutError:
            await self.close()
            raise self.failure(f"did not start within {START_TIMEOUT_S:g} s") from None

    async def _own(self, ready: asyncio.Future[list[types.Tool]]) -> None:
        try:
            async with AsyncExitStack() as stack:
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        elicitation_callback=self._elicitation,
                    )
                )
                await session.initialize()
                tools: list[types.Tool] = []
                cursor: str | None = None
                while True:
                    params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                    listed = await session.list_tools(params=params)
                    tools.extend(listed.tools)
                    cursor = listed.next_cursor
                    if not cursor:
                        break
                self._session = session
                ready.set_result(tools)
                await self._closing.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(self.failure("was stopped while starting"))
            raise
        except BaseException as error:  # the SDK raises exception groups too
            if not ready.done():
                ready.set_exception(self.failure(f"failed to start: {_describe(error)}"))
        finally:
            self._session = None

    async def _elicitation(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        """The server's question, asked in the editor's form (the server named,
        since its words are its own); declined without a form to ask it in,
        for a URL elicitation, or when the editor fails the request."""
        if self._elicit is None or not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")
        message = f"MCP server {self.name!r} asks: {params.message}"
        try:
            answer = await self._elicit(message, params.requested_schema)
        except Exception as error:  # the editor refused or failed the request
            log.info("MCP server %r: the editor did not answer its form: %s", self.name, error)
            return types.ElicitResult(action="decline")
        if answer["action"] == "accept":
            return types.ElicitResult(action="accept", content=answer.get("content") or {})
        return types.ElicitResult(action=answer["action"])

    async def _transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        """The session's streams to the server; ``stack`` closes what it needs:
        the SDK's streamable HTTP, or the host's own stdio (:mod:`.mcp_stdio`)."""
        config = self.config
        if isinstance(config, McpServerHttp):
            headers = {header.name: header.value for header in config.headers}
            # Given a client, the SDK leaves closing it to us.
            client = await stack.enter_async_context(create_mcp_http_client(headers))
            streams = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client)
            )
            return streams[0], streams[1]
        read, write, self._process = await stack.enter_async_context(
            stdio_transport(config, self._cwd)
        )
        return read, write

    async def check(self) -> None:
        """Before a later run: the server still answers, or McpFailure."""
        session = self._session
        if session is None:
            raise self.failure("is no longer running")
        try:
            await asyncio.wait_for(session.send_ping(), _PING_TIMEOUT_S)
        except TimeoutError:
            raise self.failure(f"did not answer a ping within {_PING_TIMEOUT_S:g} s") from None
        except MCPError as error:
            if error.code == types.CONNECTION_CLOSED:
                raise self.failure("has exited") from None
            # A server that does not know ping still answers: it is alive.

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[ToolOutput, bool]:
        """Call ``tool``; its output and whether it is an error. McpFailure
        when the connection is gone."""
        session = self._session
        if session is None:
            raise self.failure("is no longer running")
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as error:
            if error.code == types.CONNECTION_CLOSED:
                raise self.failure(f"exited during a call of {tool!r}") from None
            return f"{tool}: the MCP server answered an error: {error.message}", True
        return tool_output(result)

    async def close(self) -> None:
        """End the server (the SDK closes its stdin, then ends its process group)."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                # Stopping takes at most some 6 s (the SDK's grace periods).
                await asyncio.wait_for(asyncio.shield(owner), 15)
            except TimeoutError:
                owner.cancel()


def _describe(error: BaseException) -> str:
    """The innermost useful message of an error the SDK raised."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError) and error.code == types.CONNECTION_CLOSED:
        return "it exited (or closed its output) before the handshake"
    if isinstance(error, FileNotFoundError):
        return f"command not found: {error.filename or error}"
    return f"{type(error).__name__}: {error}"


class McpServers:
    """Every MCP server of one agent, and the tools they offer."""

    def __init__(
        self,
        configs: list[McpServer],
        cwd: str,
        redactor: Redactor,
        *,
        elicit: Elicitor | None = None,
    ) -> None:
        self._connections = [
            McpConnection(config, cwd, redactor, elicit=elicit) for config in configs
        ]
        self._tools: dict[str, McpTool] | None = None
        self._starting: asyncio.Lock | None = None

    async def tools(self) -> dict[str, McpTool]:
        """The tools by offered name, starting the servers on the first call
        and checking they still answer on later ones. McpFailure otherwise."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._tools is not None:
                await asyncio.gather(*(server.check() for server in self._connections))
                return self._tools
            listed = await asyncio.gather(
                *(server.start() for server in self._connections), return_exceptions=True
            )
            for outcome in listed:
                if isinstance(outcome, BaseException):
                    raise outcome
            tools: dict[str, McpTool] = {}
            for server, found in zip(self._connections, listed, strict=True):
                assert not isinstance(found, BaseException)
                for tool in found:
                    offered = offered_name(server.name, tool.name, set(tools))
                    description = tool.description or tool.name
                    declaration = undeclared_tool(offered, description, tool.input_schema)
                    tools[offered] = McpTool(declaration, server, tool.name)
            self._tools = tools
            return tools

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self._connections))
