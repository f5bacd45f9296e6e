"""``models/list`` over stdio against the simulator's list endpoints:
each provider's format, the session's cache, the defaults, and failures
answered as -32003 ProviderError with their kind, never with a key."""

from __future__ import annotations

import pytest

from oma_host.cli.client import HostClient, RpcError
from oma_host.testing.simulator import Fault, Simulator
from tests.providers.conftest import ANTHROPIC_KEY, AZURE_KEY, OPENAI_KEY


def _gets(sim: Simulator) -> list[str]:
    return [request.path for request in sim.requests if request.method == "GET"]


async def test_each_provider_lists_from_its_own_endpoint(host: HostClient, sim: Simulator) -> None:
    sim.models = ["model-a", "model-b"]
    anthropic = await host.request(
        "models/list", {"provider": "anthropic", "baseURL": sim.base_url}
    )
    assert anthropic == {
        "provider": "anthropic",
        "models": [
            {"id": "model-a", "displayName": "Model A", "created": "2025-01-01T00:00:00Z"},
            {"id": "model-b", "displayName": "Model B", "created": "2025-01-01T00:00:00Z"},
        ],
    }
    openai = await host.request(
        "models/list", {"provider": "openai", "baseURL": sim.base_url + "/v1"}
    )
    assert openai["provider"] == "openai"
    assert openai["models"] == [
        {"id": "model-a", "ownedBy": "simulator", "created": 1_700_000_000},
        {"id": "model-b", "ownedBy": "simulator", "created": 1_700_000_000},
    ]
    azure = await host.request("models/list", {"provider": "azure", "baseURL": sim.base_url})
    assert [model["id"] for model in azure["models"]] == ["model-a", "model-b"]
    assert _gets(sim) == ["/v1/models?limit=1000", "/v1/models", "/openai/v1/models"]
    anthropic_get, openai_get, azure_get = sim.requests
    assert anthropic_get.headers["x-api-key"] == ANTHROPIC_KEY
    assert "anthropic-version" in anthropic_get.headers
    assert openai_get.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert azure_get.headers["api-key"] == AZURE_KEY


async def test_lists_are_cached_per_provider_and_base_url_for_the_session(
    host: HostClient, sim: Simulator
) -> None:
    params = {"provider": "openai", "baseURL": sim.base_url + "/v1"}
    first = await host.request("models/list", params)
    sim.models = ["changed"]
    assert await host.request("models/list", params) == first
    assert len(_gets(sim)) == 1
    other = await host.request("models/list", {**params, "baseURL": sim.base_url + "/other/v1"})
    assert [model["id"] for model in other["models"]] == ["changed"]
    assert len(_gets(sim)) == 2
    # Another session has its own cache.
    second = await HostClient.spawn(env={"OPENAI_API_KEY": OPENAI_KEY})
    try:
        await second.initialize()
        fresh = await second.request("models/list", params)
        assert [model["id"] for model in fresh["models"]] == ["changed"]
    finally:
        await second.close()


async def test_the_session_defaults_say_which_provider_and_base_url(sim: Simulator) -> None:
    client = await HostClient.spawn(env={"OPENAI_API_KEY": OPENAI_KEY})
    try:
        await client.initialize(
            {"defaults": {"provider": "openai", "baseURL": sim.base_url + "/v1", "model": "m"}}
        )
        listed = await client.request("models/list", {})
        assert listed["provider"] == "openai" and _gets(sim) == ["/v1/models"]
        assert (await client.request("models/list"))["models"] == listed["models"]
        assert len(_gets(sim)) == 1
    finally:
        await client.close()


async def test_failures_are_provider_errors_with_their_kind_and_are_not_cached(
    host: HostClient, sim: Simulator
) -> None:
    params = {"provider": "openai", "baseURL": sim.base_url + "/v1"}
    sim.script(Fault(401, f"Incorrect API key provided: {OPENAI_KEY}"))
    with pytest.raises(RpcError) as caught:
        await host.request("models/list", params)
    assert caught.value.code == -32003
    assert caught.value.data == {"type": "ProviderError", "kind": "auth", "status": 401}
    assert "Incorrect API key" in str(caught.value) and OPENAI_KEY not in str(caught.value)
    sim.script(Fault(429, "slow down", retry_after=0.1))
    listed = await host.request("models/list", params)  # retried after the 429, as runs are
    assert [model["id"] for model in listed["models"]] == ["sim-small", "sim-large"]
    assert len(_gets(sim)) == 3
    with pytest.raises(RpcError) as caught:
        await host.request(
            "models/list", {"provider": "anthropic", "baseURL": "http://127.0.0.1:9"}
        )
    assert caught.value.code == -32003 and caught.value.data["kind"] == "connection"
    assert "127.0.0.1:9" in str(caught.value)


async def test_bad_params_and_providers_without_a_list(host: HostClient, sim: Simulator) -> None:
    with pytest.raises(RpcError) as caught:
        await host.request("models/list", {"provider": "nope"})
    assert caught.value.code == -32602 and "models/list: params.provider" in str(caught.value)
    with pytest.raises(RpcError) as caught:
        await host.request("models/list", {"baseUrl": sim.base_url})
    assert caught.value.code == -32602 and "params.baseUrl: is not a known field" in str(
        caught.value
    )
    with pytest.raises(RpcError) as caught:
        await host.request("models/list", {"provider": "test"})
    assert caught.value.code == -32003 and caught.value.data["kind"] == "unsupported"
    assert sim.requests == []


async def test_a_missing_key_is_an_auth_error_naming_the_variable(sim: Simulator) -> None:
    client = await HostClient.spawn(env={"ANTHROPIC_API_KEY": ""})
    try:
        await client.initialize()
        with pytest.raises(RpcError) as caught:
            await client.request(
                "models/list",
                {"provider": "anthropic", "baseURL": sim.base_url, "apiKeyEnv": "OMA_NO_SUCH_KEY"},
            )
        assert caught.value.data == {"type": "ProviderError", "kind": "auth"}
        assert "OMA_NO_SUCH_KEY" in str(caught.value)
        assert sim.requests == []
    finally:
        await client.close()
