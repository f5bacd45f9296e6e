"""An agent's ``mcpServers`` reaching a wrapped ACP agent (the TypeScript
SDK's scripted agent) in ``session/new`` through the real host, filtered by
what the agent advertised, and the ``ask-client`` answer's ``scope``."""

from __future__ import annotations

import json
from typing import Any

from oma_host.cli.client import HostClient
from tests.interop.helpers import AcpConfig
from tests.server.helpers import create

STDIO = {
    "name": "files",
    "command": "npx",
    "args": ["-y", "some-server"],
    "env": [{"name": "LEVEL", "value": "debug"}],
}
HTTP = {
    "type": "http",
    "name": "docs",
    "url": "http://127.0.0.1:9/mcp",
    "headers": [{"name": "X-Team", "value": "blue"}],
}


async def stream(host: HostClient, agent: str, text: str, token: str) -> dict[str, Any]:
    result: dict[str, Any] = await host.request(
        "agent/stream", {"agentId": agent, "input": text, "partialResultToken": token}
    )
    return result


async def test_stdio_servers_go_and_http_ones_are_reported_when_the_agent_takes_no_http(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(mcpServers=[STDIO, HTTP]))
    result = await stream(host, agent, "[mcp]", "a")
    assert result["success"] is True
    assert json.loads(result["output"]) == [STDIO]
    filtered = [e["data"] for e in host.progress("a") if e["type"] == "mcp_filtered"]
    assert filtered == [
        {
            "name": "docs",
            "type": "http",
            "reason": "the ACP agent does not advertise mcpCapabilities.http",
        }
    ]
    # Reported once, in the session's first run; the session is reused after it.
    again = await stream(host, agent, "[mcp]", "b")
    assert json.loads(again["output"]) == [STDIO]
    assert not [e for e in host.progress("b") if e["type"] == "mcp_filtered"]


async def test_http_servers_go_when_the_agent_advertises_http(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"ACP_AGENT_MCP_HTTP": "1"}, mcpServers=[HTTP, STDIO]))
    result = await stream(host, agent, "[mcp]", "a")
    # A header carries a token whatever its name: the agent got it, the result hides it.
    shown = {**HTTP, "headers": [{"name": "X-Team", "value": "[redacted]"}]}
    assert json.loads(result["output"]) == [shown, STDIO]
    assert not [e for e in host.progress("a") if e["type"] == "mcp_filtered"]


async def test_an_agent_without_servers_gets_an_empty_list(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    result = await stream(host, agent, "[mcp]", "a")
    assert json.loads(result["output"]) == []


async def test_ask_client_scope_session_picks_the_agents_allow_always_option(
    host: HostClient, acp: AcpConfig
) -> None:
    answers = iter([{"approve": True, "scope": "session"}, {"approve": True, "scope": "once"}])
    host.handlers["agent/requestPermission"] = lambda params: next(answers)
    agent = await create(host, **acp("asker", permission="ask-client"))
    first = await stream(host, agent, "[permission]", "a")
    assert first["output"] == "permission outcome: opt-allow_always"
    (event,) = [e["data"] for e in host.progress("a") if e["type"] == "permission"]
    assert event["decision"] == "allow_always"
    second = await stream(host, agent, "[permission]", "b")
    assert second["output"] == "permission outcome: opt-allow_once"


async def test_scope_session_without_an_allow_always_option_allows_once(
    host: HostClient, acp: AcpConfig
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True, "scope": "session"}
    agent = await create(host, **acp(permission="ask-client"))
    result = await stream(host, agent, "[permission:allow_once,reject_once]", "a")
    assert result["output"] == "permission outcome: opt-allow_once"
