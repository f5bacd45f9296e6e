"""The LLM backend's spans: ``chat`` around one provider request, ``compaction`` around one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from oma_host.core.config import AgentConfig
from oma_host.core.cost import Prices
from oma_host.core.events import Compaction
from oma_host.core.messages import LLMMessage
from oma_host.core.provider_facts import span_provider
from oma_host.core.redact import Redactor
from oma_host.core.spans import (
    COMPACTION_MESSAGES_AFTER,
    COMPACTION_MESSAGES_BEFORE,
    COMPACTION_STRATEGY,
    COMPACTION_TOKENS_AFTER,
    COMPACTION_TOKENS_BEFORE,
    COMPACTION_TRIGGER,
    COST_USD,
    ERROR_TYPE,
    FINISH_REASONS,
    HTTP_STATUS,
    OP_CHAT,
    OP_COMPACTION,
    OUTPUT_MESSAGES,
    PROVIDER,
    REQUEST_MODEL,
    RESPONSE_MODEL,
    Attributes,
    Span,
    open_span,
    set_span_content,
    usage_attributes,
)
from oma_host.providers.base import LLMResponse, ProviderError


@contextmanager
def chat_span(config: AgentConfig, model: str) -> Iterator[Span | None]:
    """The span of one request to ``model`` (None when nobody records); a
    failed request's ``error.type`` is the ProviderError's kind (``auth``,
    ``rate_limit``, ``context_too_long``...), with the HTTP status the
    provider answered."""
    attributes: Attributes = {PROVIDER: span_provider(config.provider), REQUEST_MODEL: model}
    with open_span(OP_CHAT, f"{OP_CHAT} {model}", attributes) as span:
        try:
            yield span
        except ProviderError as error:
            if span is not None:
                span.attributes[ERROR_TYPE] = error.kind
                if error.status_code is not None:
                    span.attributes[HTTP_STATUS] = error.status_code
            raise


def record_reply(
    span: Span | None,
    response: LLMResponse,
    model: str,
    prices: Prices | None,
    redactor: Redactor,
) -> None:
    """The reply on its span: the model that answered (as the provider
    named it, else ``model``, the one asked), the usage, why it stopped,
    what it cost (at ``model``'s prices, as the run's cost is counted); its
    content only with content capture on."""
    if span is None:
        return
    attributes = span.attributes
    attributes[RESPONSE_MODEL] = response.model or model
    attributes.update(usage_attributes(response.usage))
    attributes[FINISH_REASONS] = [response.stop_reason]
    if prices is not None:
        attributes[COST_USD] = round(prices.cost(response.usage), 8)
    reply: LLMMessage = {"role": "assistant", "content": response.content}
    set_span_content(span, OUTPUT_MESSAGES, [reply], redactor)


@contextmanager
def compaction_span(trigger: str) -> Iterator[Span | None]:
    """The span of one compaction (``threshold``, ``too_long``, ``request``);
    its summary requests are ``chat`` spans under it."""
    attributes: Attributes = {COMPACTION_TRIGGER: trigger}
    with open_span(OP_COMPACTION, f"{OP_COMPACTION} {trigger}", attributes) as span:
        yield span


def record_compaction(span: Span | None, payload: Compaction) -> None:
    """What a compaction did, from its ``compaction`` event's payload."""
    if span is None:
        return
    span.attributes.update(
        {
            COMPACTION_STRATEGY: payload["strategy"],
            COMPACTION_MESSAGES_BEFORE: payload["before"],
            COMPACTION_MESSAGES_AFTER: payload["after"],
            COMPACTION_TOKENS_BEFORE: payload["tokensBefore"],
            COMPACTION_TOKENS_AFTER: payload["tokensAfter"],
        }
    )
