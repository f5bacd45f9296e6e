"""Each permission decision kept in the run's result: the ``toolCalls``
record of a call carries its ``permission`` event's data, through a real
``oma-host`` over stdio whose model is the provider simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config
from tests.server.helpers import HostFactory


@pytest.fixture
async def host(spawn_host: HostFactory) -> HostClient:
    return await spawn_host(env={"ANTHROPIC_API_KEY": "sk-ant-test-key"})


async def test_tool_call_records_carry_their_permission_decisions(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    config = llm_config(
        sim,
        "anthropic",
        tools=["file_read", "file_write"],
        cwd=str(tmp_path),
        permissions=[{"tool": "file_read", "pattern": "secret*", "action": "deny"}],
    )
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    sim.script(
        reply(
            tool_use("r", "file_read", path="a.txt"),
            tool_use("s", "file_read", path="secret.txt"),
            tool_use("w", "file_write", path="b.txt", content="beta"),
            tool_use("x", "no_such_tool"),
        ),
        Reply.text("done"),
    )
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "t"}
    )
    events = [e["data"] for e in host.progress("t") if e["type"] == "permission"]
    records = result["toolCalls"]
    assert [record["toolName"] for record in records] == [
        "file_read",
        "file_read",
        "file_write",
        "no_such_tool",
    ]
    # Each decided call's record holds its event, as streamed.
    assert [record.get("permission") for record in records[:3]] == events
    assert [(e["decision"], e["by"]) for e in events] == [
        ("allow", "default"),
        ("deny", "rule"),
        ("deny", "client"),
    ]
    assert records[1]["permission"]["rule"] == 0
    # An unknown tool is refused before the policy: no decision to record.
    assert "permission" not in records[3]
    assert not (tmp_path / "b.txt").exists()
