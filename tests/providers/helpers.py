"""Helpers for the provider tests."""

from __future__ import annotations

from typing import Any

from oma_host.cli.client import HostClient
from oma_host.testing.script import RecordedRequest
from oma_host.testing.simulator import Simulator
from tests import builders
from tests.builders import text

PROVIDERS = ["anthropic", "openai"]
# The OpenAI family's other wires, as llm_config names them: the Responses API
# (provider openai, api responses) and Azure OpenAI's v1 endpoint (Responses).
OPENAI_FAMILY = ["openai-responses", "azure"]
TRANSPORTS = ["aiohttp", "httpx"]  # initializationOptions.http.transport


def llm_config(sim: Simulator, provider: str, **extra: Any) -> dict[str, Any]:
    """An agent that talks to the simulator in ``provider``'s wire format."""
    if provider == "openai-responses":
        return llm_config(sim, "openai", api="responses", **extra)
    if provider == "azure":  # the resource's root: the adapter adds /openai/v1
        return {
            "name": "azure-agent",
            "provider": "azure",
            "model": "sim-deployment",
            "baseURL": sim.base_url,
            **extra,
        }
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


def without_cache_marks(value: Any) -> Any:
    """``value`` without Anthropic's ``cache_control`` marks (promptCaching is
    on by default; test_anthropic_thinking_caching checks where they go)."""
    if isinstance(value, dict):
        return {k: without_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [without_cache_marks(item) for item in value]
    return value


def conversation_messages(provider: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation in a request body, without OpenAI's system message
    and Anthropic's cache marks."""
    messages: list[dict[str, Any]] = without_cache_marks(body["messages"])
    return [m for m in messages if m.get("role") != "system"]


def system_text(provider: str, body: dict[str, Any]) -> str:
    """The system prompt of a request body, as text."""
    if provider == "anthropic":
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    content: str = body["messages"][0]["content"]
    return content


def tool_result_text(request: RecordedRequest) -> str | None:
    """The text of the first tool result an Anthropic-wire request's last
    message carries, None when it carries none (a responder tells a turn
    after a tool call from a fresh task by it)."""
    content = request.body["messages"][-1]["content"]
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "tool_result":
            inner = block["content"]
            return inner if isinstance(inner, str) else "".join(b["text"] for b in inner)
    return None


def results_sent(sim: Simulator, index: int = 1) -> list[dict[str, Any]]:
    """The blocks of the last message of the simulator's request ``index``:
    after a tool call, the tool results the host sent back."""
    content: list[dict[str, Any]] = sim.requests[index].body["messages"][-1]["content"]
    return content
