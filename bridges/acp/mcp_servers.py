"""Which of an agent's ``mcpServers`` the ACP bridge passes to the wrapped agent.

stdio servers always, HTTP ones only when the agent advertised
``mcpCapabilities.http``. One left out is not dropped silently: the session's
first run emits an ``mcp_filtered`` event saying why.
"""

from __future__ import annotations

from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    EnvVariable,
    HttpHeader,
    HttpMcpServer,
    McpServerStdio,
    SseMcpServer,
)

from oma_host.core.config import McpServer, McpServerHttp
from oma_host.core.events import McpFiltered

# What NewSessionRequest.mcp_servers holds.
SessionServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def session_servers(
    configs: list[McpServer], capabilities: AgentCapabilities | None
) -> tuple[list[SessionServer], list[McpFiltered]]:
    """(the servers to send, the ``mcp_filtered`` event data of each left out)."""
    mcp = capabilities.mcp_capabilities if capabilities is not None else None
    takes_http = bool(mcp is not None and mcp.http)
    passed: list[SessionServer] = []
    left_out: list[McpFiltered] = []
    for server in configs:
        if isinstance(server, McpServerHttp):
            if not takes_http:
                left_out.append(
                    {
                        "name": server.name,
                        "type": "http",
                        "reason": "the ACP agent does not advertise mcpCapabilities.http",
                    }
                )
                continue
            headers = [HttpHeader(name=h.name, value=h.value) for h in server.headers]
            passed.append(
                HttpMcpServer(type="http", name=server.name, url=server.url, headers=headers)
            )
        else:
            env = [EnvVariable(name=v.name, value=v.value) for v in server.env]
            passed.append(
                McpServerStdio(name=server.name, command=server.command, args=server.args, env=env)
            )
    return passed, left_out
