"""Replies and settings of the wrong shape end in clear failed results, never
in a JSON-RPC error or a hung run."""

from __future__ import annotations

import json

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.conftest import ANTHROPIC_KEY
from tests.providers.helpers import create_llm


async def test_a_reply_block_missing_its_fields_is_a_malformed_failure(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic")
    sim.script(reply({"type": "tool_use", "name": "x", "input": {}}))
    result = await host.request("agent/run", {"agentId": agent, "input": "x", "workDoneToken": "w"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "malformed"
    kinds = [value["kind"] for value in host.progress("w")]
    assert kinds[0] == "begin" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"report"}


async def test_an_unusable_base_url_is_a_connection_failure(
    host: HostClient, sim: Simulator
) -> None:
    config = {"name": "u", "provider": "anthropic", "model": "m", "baseURL": "localhost:1"}
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "connection"


async def test_a_retry_after_that_is_neither_seconds_nor_a_date_is_ignored(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic")
    sim.script(Fault(429, "slow down", retry_after="soon-ish"), Reply.text("retried"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["output"] == "retried"


async def test_tool_input_that_is_not_an_object_comes_back_as_an_error_result(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic", tools=["file_read"])
    calls = [
        tool_use("a", "file_read", ["x"]),
        tool_use("b", "file_read", path="a\u0000b"),
    ]
    sim.script(Reply(content=calls), Reply.text("done"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is True and result["output"] == "done"
    results = sim.requests[1].body["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True]
    assert "must be a JSON object" in results[0]["content"]


async def test_a_key_from_the_environment_is_redacted_from_provider_errors(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create_llm(host, sim, "anthropic")  # the key comes from ANTHROPIC_API_KEY
    sim.script(Fault(401, f"invalid x-api-key: {ANTHROPIC_KEY}"))
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False
    assert ANTHROPIC_KEY not in json.dumps(result)
