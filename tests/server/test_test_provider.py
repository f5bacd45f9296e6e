"""The in-process ``test`` provider is offered only by a host started with
``OMA_HOST_TEST_PROVIDER=1``: without it, ``initialize`` does not list it and
a config naming it is InvalidParams saying what to set. (The suite's hosts
have it from tests/conftest.py; these set it themselves.)"""

from __future__ import annotations

from oma_host.cli.client import HostClient
from oma_host.core.provider_facts import TEST_PROVIDER_VARIABLE
from tests.server.helpers import create, expect_error


async def test_a_host_started_without_the_variable_neither_lists_nor_runs_it() -> None:
    client = await HostClient.spawn(env={TEST_PROVIDER_VARIABLE: ""})
    providers = (await client.initialize())["capabilities"]["agent"]["providers"]
    assert "test" not in providers and "anthropic" in providers
    error = await expect_error(
        create(client, name="echo", provider="test", model="echo"), -32602, "InvalidParams"
    )
    assert "OMA_HOST_TEST_PROVIDER=1" in error.message and "config.provider" in error.message
    assert await client.close() == 0


async def test_a_host_started_with_it_lists_and_runs_it() -> None:
    client = await HostClient.spawn(env={TEST_PROVIDER_VARIABLE: "1"})
    assert "test" in (await client.initialize())["capabilities"]["agent"]["providers"]
    agent = await create(client, name="echo", provider="test", model="echo")
    result = await client.request("agent/run", {"agentId": agent, "input": "hi"})
    assert result["success"] and '"hi"' in result["output"], result
    assert await client.close() == 0
