"""A ``chat`` span's ``gen_ai.response.model`` is the model the provider
says answered, ``gen_ai.request.model`` the one asked: a real ``oma-host``
exporting to a receiver on 127.0.0.1, each wire's agent asked once without
streaming and once streaming, the provider simulator answering with another
name than the one asked (as an alias's answer names its dated version).
Bedrock's Converse names no model: its span keeps the one asked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.script import Reply
from oma_host.testing.simulator import Simulator
from tests.providers.conftest import ANTHROPIC_KEY, AZURE_KEY, OPENAI_KEY
from tests.providers.gemini_bedrock import gb_config, host_env
from tests.providers.helpers import llm_config
from tests.telemetry.receiver import ReceivedSpan, Receiver, by_operation, trace_of

# The wires as llm_config and gb_config name them: Anthropic's Messages,
# OpenAI's Chat Completions and Responses, Azure's v1 (Responses), Gemini, Bedrock.
WIRES = ["anthropic", "openai", "openai-responses", "azure", "gemini", "bedrock"]
METHODS = ["agent/run", "agent/stream"]


def answered_name(wire: str) -> str:
    return f"{wire}-answered-2025-05-14"


def config(sim: Simulator, wire: str) -> dict[str, Any]:
    if wire in ("gemini", "bedrock"):
        return gb_config(sim, wire)
    return llm_config(sim, wire, name=f"{wire}-agent")


@dataclass
class Asked:
    run_id: str
    model: str  # the agent's model


async def _ask_every_wire(sim: Simulator, collector: Receiver) -> dict[tuple[str, str], Asked]:
    """Each wire's agent asked by each method, by (wire, method)."""
    env = host_env(
        ANTHROPIC_API_KEY=ANTHROPIC_KEY,
        OPENAI_API_KEY=OPENAI_KEY,
        AZURE_OPENAI_API_KEY=AZURE_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT=collector.endpoint,
    )
    host = await HostClient.spawn(host_argv(), env=env)
    await host.initialize()
    runs: dict[tuple[str, str], Asked] = {}
    try:
        for wire in WIRES:
            agent = config(sim, wire)
            created = await host.request("agent/create", {"config": agent})
            for method in METHODS:
                sim.script(Reply.text(f"{wire} answers", model=answered_name(wire)))
                params = {"agentId": created["agentId"], "input": "which model are you?"}
                if method == "agent/stream":
                    params["partialResultToken"] = "s"
                result = await host.request(method, params)
                assert result["success"], result
                runs[wire, method] = Asked(result["identity"]["runId"], agent["model"])
    finally:
        assert await host.close() == 0  # shutdown flushes the queued spans
    return runs


@pytest.fixture(scope="module")
def exported() -> Iterator[tuple[list[ReceivedSpan], dict[tuple[str, str], Asked]]]:
    with Simulator() as sim, Receiver() as collector:
        runs = asyncio.run(_ask_every_wire(sim, collector))
        yield collector.spans, runs


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("wire", WIRES)
def test_the_chat_span_names_the_model_that_answered_and_the_one_asked(
    exported: tuple[list[ReceivedSpan], dict[tuple[str, str], Asked]], wire: str, method: str
) -> None:
    spans, runs = exported
    asked = runs[wire, method]
    (chat,) = by_operation(trace_of(spans, asked.run_id), "chat")
    assert chat.name == f"chat {asked.model}"
    assert chat.attributes["gen_ai.request.model"] == asked.model
    answered = asked.model if wire == "bedrock" else answered_name(wire)
    assert chat.attributes["gen_ai.response.model"] == answered
