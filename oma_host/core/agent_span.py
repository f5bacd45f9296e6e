"""A run's ``invoke_agent`` span (:mod:`oma_host.core.spans`): what it says
when the run starts (the agent, its backend, an LLM agent's provider and
model, the session of a run a client started) and what the result adds when
it ends (status, usage, turns, the model that answered, cost; the input and
output only with content capture on)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from oma_host.core.backends import backend_kind
from oma_host.core.config import AgentConfig
from oma_host.core.messages import LLMMessage
from oma_host.core.provider_facts import span_provider
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult
from oma_host.core.spans import (
    AGENT_NAME,
    BACKEND,
    CONVERSATION_ID,
    COST_USD,
    INPUT_MESSAGES,
    OP_INVOKE_AGENT,
    OUTPUT_MESSAGES,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    TURNS,
    Attributes,
    Span,
    capturing_content,
    conversation_id,
    end_as,
    open_span,
    set_span_content,
    usage_attributes,
)


@contextmanager
def agent_span(config: AgentConfig, run_id: str, *, delegated: bool) -> Iterator[Span | None]:
    """The span of one run of the agent ``config`` describes; a delegate's
    run (``delegated``) is not the session's, so it names none."""
    attributes: Attributes = {AGENT_NAME: config.name, BACKEND: backend_kind(config)}
    if config.backend is None:
        attributes[PROVIDER] = span_provider(config.provider)
        if config.model:
            attributes[REQUEST_MODEL] = config.model
    session = None if delegated else conversation_id()
    if session is not None:
        attributes[CONVERSATION_ID] = session
    name = f"{OP_INVOKE_AGENT} {config.name}"
    with open_span(OP_INVOKE_AGENT, name, attributes, run_id=run_id) as span:
        yield span


def end_agent_span(
    span: Span | None, config: AgentConfig, messages: list[LLMMessage], result: AgentRunResult
) -> None:
    """The run's outcome on its span."""
    if span is None:
        return
    error = result.get("errorInfo")
    end_as(span, result["status"]["code"], None if error is None else error["kind"])
    attributes = span.attributes
    attributes.update(usage_attributes(result["tokenUsage"]))
    attributes[TURNS] = sum(1 for m in result["messages"] if m["role"] == "assistant")
    if "model" in result:
        attributes[RESPONSE_MODEL] = result["model"]
    if "cost" in result:
        attributes[COST_USD] = result["cost"]["amount"]
    if capturing_content():
        redactor = Redactor.for_config(config)
        set_span_content(span, INPUT_MESSAGES, messages, redactor)
        set_span_content(span, OUTPUT_MESSAGES, result["output"], redactor)
