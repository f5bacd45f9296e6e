"""What runs cost, on the JSON-RPC door: ``cost`` in each result and the
agent's total in ``agent/state``, from the provider's model table or the
agent's ``pricing``, cache reads and writes priced apart; none for a model
no table knows or an external agent. Driven through a real host against the
provider simulator."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator


async def _host() -> HostClient:
    client = await HostClient.spawn(host_argv(), env={"ANTHROPIC_API_KEY": "sk-ant-cost-test"})
    await client.initialize()
    return client


async def _agent(client: HostClient, sim: Simulator, **fields: Any) -> str:
    config = {"name": "priced", "provider": "anthropic", "baseURL": sim.base_url, **fields}
    created = await client.request("agent/create", {"config": config})
    agent_id: str = created["agentId"]
    return agent_id


async def test_results_and_state_carry_the_cost_from_the_model_table(sim: Simulator) -> None:
    usage = {
        "input_tokens": 2000,
        "output_tokens": 300,
        "cache_read_input_tokens": 10_000,
        "cache_creation_input_tokens": 400,
    }
    sim.script(Reply.text("a", usage=usage), Reply.text("b", usage=usage))
    client = await _host()
    agent = await _agent(client, sim, model="claude-sonnet-4-5-20250929")
    first = await client.request("agent/prompt", {"agentId": agent, "input": "one"})
    second = await client.request("agent/run", {"agentId": agent, "input": "two"})
    state = await client.request("agent/state", {"agentId": agent})
    await client.request("agent/reset", {"agentId": agent})
    after_reset = await client.request("agent/state", {"agentId": agent})
    assert await client.close() == 0
    # Sonnet 4.5: $3 in, $15 out, cache writes 1.25x the input, reads 0.1x.
    expected = (2000 * 3 + 300 * 15 + 400 * 3.75 + 10_000 * 0.3) / 1e6
    for result in (first, second):
        assert result["cost"] == {"amount": pytest.approx(expected), "currency": "USD"}
    assert state["cost"] == {"amount": pytest.approx(2 * expected), "currency": "USD"}
    assert after_reset["cost"] == {"amount": 0.0, "currency": "USD"}


async def test_pricing_overrides_the_table_and_an_unknown_model_has_no_cost(
    sim: Simulator,
) -> None:
    sim.script(Reply.text("a"), Reply.text("b"))
    client = await _host()
    priced = await _agent(client, sim, model="my-model", pricing={"input": 10, "output": 20})
    unknown = await _agent(client, sim, model="my-model")
    worker = await client.request(
        "agent/create", {"config": {"name": "w", "backend": {"kind": "process", "command": "cat"}}}
    )
    results = [
        await client.request("agent/run", {"agentId": agent, "input": "x"})
        for agent in (priced, unknown, worker["agentId"])
    ]
    states = [
        await client.request("agent/state", {"agentId": agent})
        for agent in (unknown, worker["agentId"])
    ]
    assert await client.close() == 0
    assert all(result["success"] for result in results), results
    assert results[0]["cost"]["amount"] == pytest.approx((10 * 10 + 5 * 20) / 1e6)
    assert "cost" not in results[1] and "cost" not in results[2]
    assert all("cost" not in state for state in states)
