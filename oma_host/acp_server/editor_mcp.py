"""The editor's ``mcpServers`` from ``session/new`` and ``session/load``, as host MCP configs.

The door advertises ``mcpCapabilities.http`` and not ``sse``: any other
transport, or a server the config model refuses, is -32602 naming the server
and where it is in the request.
"""

from __future__ import annotations

from typing import Any

from acp import RequestError
from acp.schema import HttpMcpServer, McpServerStdio
from pydantic import ValidationError

from oma_host.core.config import McpServer, McpServerHttp
from oma_host.core.config import McpServerStdio as HostStdio


def host_servers(servers: list[Any] | None) -> list[McpServer]:
    """The editor's servers as host configs; RequestError for one it cannot use."""
    converted: list[McpServer] = []
    for index, server in enumerate(servers or []):
        where = f"mcpServers[{index}]"
        try:
            if isinstance(server, McpServerStdio):
                converted.append(
                    HostStdio.model_validate(
                        {
                            "name": server.name,
                            "command": server.command,
                            "args": server.args,
                            "env": [{"name": v.name, "value": v.value} for v in server.env],
                        }
                    )
                )
            elif isinstance(server, HttpMcpServer):
                converted.append(
                    McpServerHttp.model_validate(
                        {
                            "type": "http",
                            "name": server.name,
                            "url": server.url,
                            "headers": [{"name": h.name, "value": h.value} for h in server.headers],
                        }
                    )
                )
            else:
                kind = getattr(server, "type", type(server).__name__)
                raise RequestError.invalid_params(
                    {
                        "message": f"{where} ({getattr(server, 'name', '?')!r}): transport "
                        f"{kind!r} is not supported; oma-host takes stdio and http servers"
                    }
                )
        except ValidationError as error:
            problem = error.errors()[0]
            field = ".".join(str(part) for part in problem["loc"])
            raise RequestError.invalid_params(
                {"message": f"{where}.{field}: {problem['msg']}"}
            ) from None
    return converted
