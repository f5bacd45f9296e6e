"""ACP agents through the real host (the scripted TypeScript-SDK agent):
secrets split between chunks, and descendants that leave the process group
(issue 12, items 8 and 11)."""

from __future__ import annotations

import json

from oma_host.cli.client import HostClient
from tests.interop.helpers import AcpConfig
from tests.server.helpers import create, kill_quietly, pid_alive
from tests.server.helpers import wait_dead_async as wait_dead

TOKEN = "acp-0f1e2d3c4b5a69788796a5b4c3d2e1f0"


async def test_an_env_secret_split_over_two_chunks_is_redacted_in_the_stream(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"AGENT_API_TOKEN": TOKEN}))
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "[secret]", "partialResultToken": "s"}
    )
    text = "".join(event["data"] for event in host.progress("s") if event["type"] == "text")
    assert TOKEN not in text and TOKEN not in json.dumps(host.notifications)
    assert text == result["output"] == "key: [redacted] end"


async def test_a_detached_grandchild_of_an_acp_agent_ends_with_the_agent(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    answer = await host.request("agent/run", {"agentId": agent, "input": "[daemon]"})
    daemon = int(answer["output"].removeprefix("daemon="))
    try:
        assert pid_alive(daemon)
        assert await host.request("agent/dispose", {"agentId": agent}) is None
        assert await wait_dead(daemon)
    finally:
        kill_quietly(daemon)
