"""Each permission decision kept in the run's result: the ``toolCalls``
record of a call carries its ``permission`` event's data, through a real
``oma-host`` over stdio whose model is the provider simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.providers.helpers import llm_config


@pytest.fixture
async def host() -> AsyncIterator[HostClient]:
    client = await HostClient.spawn(env={"ANTHROPIC_API_KEY": "sk-ant-test-key"})
    await client.initialize()
    yield client
    await client.close()


def _use(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


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
        Reply(
            content=[
                _use("r", "file_read", path="a.txt"),
                _use("s", "file_read", path="secret.txt"),
                _use("w", "file_write", path="b.txt", content="beta"),
                _use("x", "no_such_tool"),
            ]
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
