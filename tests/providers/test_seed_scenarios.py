"""The seed's structured-input scenarios on LLM-backed agents, end to end:
a real ``oma-host`` over stdio talking to the provider simulator over HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.providers.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.providers.helpers import (
    PROVIDERS,
    conversation_messages,
    create_llm,
    image,
    system_text,
    text,
    wire_assistant,
    wire_image,
    wire_user,
)
from tests.server.helpers import HostFactory


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_caller_history_with_an_image_reaches_the_provider_exactly(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    agent = await create_llm(host, sim, provider, systemPrompt="You describe images.")
    conversation = [
        {"role": "user", "content": [text("What is this?"), image()]},
        {"role": "assistant", "content": [text("A pixel.")]},
        {"role": "user", "content": [text("What colour?")]},
    ]
    sim.script(Reply.text("Red."))
    result = await host.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is True and result["output"] == "Red."
    body = sim.requests[-1].body
    assert conversation_messages(provider, body) == [
        wire_user(provider, text("What is this?"), wire_image(provider)),
        wire_assistant(provider, "A pixel."),
        wire_user(provider, text("What colour?")),
    ]
    assert system_text(provider, body) == "You describe images."
    if provider != "anthropic":
        assert body["messages"][0]["role"] == "system"


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_prompt_with_restored_history_image_blocks_and_a_hook_rewrite(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    restored = [
        {"role": "user", "content": [text("Remember this picture"), image()]},
        {"role": "assistant", "content": [text("Noted.")]},
    ]
    agent = await create_llm(host, sim, provider, history=restored, hooks={"beforeRun": True})
    seen: list[Any] = []

    def before_run(params: Any) -> Any:
        seen.append(params)
        return {"prompt": "Compare both pictures, briefly."}

    host.handlers["agent/beforeRun"] = before_run
    turn = [text("Compare "), image("AAAA"), text("them")]
    sim.script(Reply.text("They match."))
    result = await host.request("agent/prompt", {"agentId": agent, "input": turn})
    assert result["success"] is True
    # The hook saw the whole effective input and the concatenated prompt.
    assert seen[0]["prompt"] == "Compare them"
    assert seen[0]["messages"] == [*restored, {"role": "user", "content": turn}]
    # The provider got the restored history and the rewritten turn, image kept in place.
    body = sim.requests[-1].body
    assert conversation_messages(provider, body) == [
        wire_user(provider, text("Remember this picture"), wire_image(provider)),
        wire_assistant(provider, "Noted."),
        wire_user(provider, text("Compare both pictures, briefly."), wire_image(provider, "AAAA")),
    ]
    # History keeps the caller's original turn, then the reply.
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert history == [
        *restored,
        {"role": "user", "content": turn},
        {"role": "assistant", "content": [text("They match.")]},
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_image_only_turn_gives_the_hook_an_empty_prompt(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    agent = await create_llm(host, sim, provider, hooks={"beforeRun": True})
    prompts: list[str] = []
    host.handlers["agent/beforeRun"] = lambda params: prompts.append(params["prompt"])
    sim.script(Reply.text("An image."))
    result = await host.request("agent/prompt", {"agentId": agent, "input": [image()]})
    assert result["success"] and prompts == [""]
    assert conversation_messages(provider, sim.requests[-1].body) == [
        wire_user(provider, wire_image(provider))
    ]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_provider_400_for_an_image_is_a_failed_result_and_the_image_was_sent(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    agent = await create_llm(host, sim, provider)
    sim.script(Fault(400, "This model does not support image input."))
    result = await host.request(
        "agent/run",
        {"agentId": agent, "input": [{"role": "user", "content": [text("see"), image()]}]},
    )
    assert result["success"] is False
    assert result["status"]["code"] == "error"
    assert "This model does not support image input." in result["status"]["message"]
    assert "400" in result["status"]["message"]
    assert result["errorInfo"]["kind"] == "provider"
    assert len(sim.requests) == 1  # a 400 is never retried
    sent = conversation_messages(provider, sim.requests[0].body)
    assert sent == [wire_user(provider, text("see"), wire_image(provider))]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_keys_go_in_the_provider_header_and_nowhere_else(
    spawn_host: HostFactory,
    host_variables: dict[str, str],
    host_options: dict[str, Any],
    sim: Simulator,
    provider: str,
) -> None:
    host = await spawn_host(env=host_variables, options=host_options)  # its stderr is read
    agent = await create_llm(host, sim, provider, hooks={"beforeRun": True, "afterRun": True})
    host.handlers["agent/beforeRun"] = lambda params: None
    host.handlers["agent/afterRun"] = lambda params: None
    sim.script(Reply.text("ok"), Fault(401, f"invalid x-api-key {ANTHROPIC_KEY} {OPENAI_KEY}"))
    await host.request("agent/stream", {"agentId": agent, "input": "hi", "partialResultToken": 1})
    failed = await host.request("agent/run", {"agentId": agent, "input": "hi"})
    assert failed["success"] is False
    headers = sim.requests[0].headers
    if provider == "anthropic":
        assert headers["x-api-key"] == ANTHROPIC_KEY
        assert headers["anthropic-version"] == "2023-06-01"
    else:
        assert headers["authorization"] == f"Bearer {OPENAI_KEY}"
    await host.close()
    transcript = json.dumps(host.received) + await host.stderr_text()
    assert ANTHROPIC_KEY not in transcript and OPENAI_KEY not in transcript
    assert "[redacted]" in failed["status"]["message"]
