"""Each adapter maps only the messages a request adds to the conversation it
sent last (``providers/wire_prefix.py``), and encodes only their JSON: what it
sends must be, request after request, exactly what mapping the whole
conversation gives, with one cache mark where the provider takes one, never a
mark left behind on a message that was last before, and byte for byte the
JSON of the whole body."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.providers import anthropic, bedrock, gemini, openai, openai_responses
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.providers.gemini_bedrock import gb_config, host_env
from tests.providers.helpers import llm_config
from tests.server.helpers import HostFactory

# A system prompt: OpenAI's chat wire puts it first among the messages.
SYSTEM = "answer briefly"


@pytest.fixture
async def host(spawn_host: HostFactory) -> HostClient:
    return await spawn_host(
        env=host_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY, OPENAI_API_KEY=OPENAI_KEY)
    )


def _whole(provider: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation mapped whole, as a request carries it."""
    if provider == "anthropic":
        wire = anthropic.to_wire_messages(messages)  # type: ignore[arg-type]
        anthropic.mark_cache_prefix(wire)
        return wire
    if provider == "bedrock":
        wire = bedrock.to_wire_messages(messages)  # type: ignore[arg-type]
        return [*wire[:-1], {**wire[-1], "content": [*wire[-1]["content"], bedrock.CACHE_POINT]}]
    if provider == "gemini":
        return gemini.to_wire_contents(messages)  # type: ignore[arg-type]
    if provider == "openai-responses":
        return openai_responses.to_input_items(messages)  # type: ignore[arg-type]
    return openai.to_wire_messages(messages, SYSTEM)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "provider", ["anthropic", "openai", "openai-responses", "gemini", "bedrock"]
)
async def test_each_request_is_the_whole_conversation_mapped_afresh(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    if provider in ("gemini", "bedrock"):
        config = gb_config(sim, provider, promptCaching=True, systemPrompt=SYSTEM)
    else:
        config = llm_config(sim, provider, systemPrompt=SYSTEM)
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    call = tool_use("call_1", "nothing_here", q=1)
    sim.script(reply("looking", call), Reply.text("none"))
    for said in ("first ünïcödé ✓", "second", 'third \u2028 "quoted"'):
        result = await host.request("agent/prompt", {"agentId": agent, "input": said})
        assert result["success"] is True, result
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    key = {"gemini": "contents", "openai-responses": "input"}.get(provider, "messages")
    sent = [request.body[key] for request in sim.requests]
    # first (a tool call, its error result, the answer), second, third.
    ends = [1, 3, 5, 7]
    assert len(sent) == len(ends)
    for body, end in zip(sent, ends, strict=True):
        assert body == _whole(provider, history[:end]), json.dumps(body)[:500]
    for request in sim.requests:  # the spliced JSON is the whole body's
        whole = json.dumps(request.body, ensure_ascii=False, separators=(",", ":"))
        assert request.raw == whole.encode()
