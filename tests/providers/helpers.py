"""Helpers for the provider tests."""

from __future__ import annotations

from typing import Any

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Simulator
from tests import builders
from tests.builders import text

PROVIDERS = ["anthropic", "openai"]
TRANSPORTS = ["aiohttp", "httpx"]  # initializationOptions.http.transport


def llm_config(sim: Simulator, provider: str, **extra: Any) -> dict[str, Any]:
    """An agent that talks to the simulator in ``provider``'s wire format."""
    base = sim.base_url + ("/v1" if provider == "openai" else "")
    return {
        "name": f"{provider}-agent",
        "provider": provider,
        "model": "sim-1",
        "baseURL": base,
        **extra,
    }


async def create_llm(host: HostClient, sim: Simulator, provider: str, **extra: Any) -> str:
    result = await host.request("agent/create", {"config": llm_config(sim, provider, **extra)})
    agent_id: str = result["agentId"]
    return agent_id


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="  # noqa: E501


def image(data: str = PNG) -> dict[str, Any]:
    """An image block holding a real PNG (providers may look at it)."""
    return builders.image(data)


def wire_image(provider: str, data: str = PNG) -> dict[str, Any]:
    """How ``image(data)`` must look on the provider's wire."""
    if provider == "anthropic":
        return image(data)
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def wire_user(provider: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def wire_assistant(provider: str, words: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {"role": "assistant", "content": [text(words)]}
    return {"role": "assistant", "content": words}


def conversation_messages(provider: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation in a request body, without OpenAI's system message."""
    messages: list[dict[str, Any]] = body["messages"]
    return [m for m in messages if m.get("role") != "system"]
