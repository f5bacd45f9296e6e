"""The Anthropic Messages API adapter (``POST {baseURL}/v1/messages``): the request it sends.

Answers are read by :mod:`.anthropic_reply`. Reasoning goes back as
``thinking`` or ``redacted_thinking``, unchanged. ``promptCaching`` marks the
system prompt, the last tool and the last block, so the whole request is the
prefix the next turn reads from the cache. docs/providers.md, "How blocks map".
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NoReturn

from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.provider_facts import facts_of
from oma_host.providers.anthropic_reply import (
    NAME,
    StreamState,
    from_wire_block,
    quick_text_delta,
    read_error,
    tool_use_block,
    usage_of,
)
from oma_host.providers.base import (
    MALFORMED,
    ChatOptions,
    LLMResponse,
    ProviderError,
    ProviderEvent,
    answered_model,
    checked_messages,
    malformed_error,
    malformed_reply,
    provider_base_url,
    required_key,
)
from oma_host.providers.http import open_response, request_json
from oma_host.providers.sse import event_json, sse_batches
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig, ThinkingConfig

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_FACTS = facts_of(NAME)
EPHEMERAL = {"type": "ephemeral"}
# budget_tokens for an effort on the models that take no adaptive thinking.
EFFORT_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
MIN_THINKING_BUDGET = 1024
# claude-opus-4-6, claude-sonnet-4-5-20250929, claude-3-7-sonnet-20250219, claude-opus-5
_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:-(\d)(?!\d))?")


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{NAME}: {where}: {what} cannot be sent to the Anthropic Messages API",
        kind="unsupported_block",
    )


def _media(source: dict[str, Any]) -> dict[str, Any]:
    if source["type"] == "base64":
        return {"type": "base64", "media_type": source["media_type"], "data": source["data"]}
    return {"type": "url", "url": source["url"]}


def _tool_result_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["type"]
    if kind == "text":
        return {"type": "text", "text": part["text"]}
    if kind == "image":
        return {"type": "image", "source": _media(part["source"])}
    # A file travels as a document block, titled with its file name.
    return {"type": "document", "source": _media(part["source"]), "title": part["filename"]}


def _wire_block(block: ContentBlock) -> dict[str, Any] | None:
    """The block on the wire, or None for one that has no Anthropic form
    (which :func:`_refused` names): the place of a block in the messages is
    text only when an error needs it, not once per block per request."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block["text"]}
    if kind == "image":
        return {"type": "image", "source": _media(block["source"])}
    if kind == "tool_use":
        return tool_use_block(block)
    if kind == "tool_result":
        content = block["content"]
        wire: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": block["tool_use_id"],
            "content": content
            if isinstance(content, str)
            else [_tool_result_part(p) for p in content],
        }
        if "is_error" in block:
            wire["is_error"] = block["is_error"]
        return wire
    if kind == "reasoning":
        if "redactedData" in block:
            return {"type": "redacted_thinking", "data": block["redactedData"]}
        if "signature" not in block:
            return None
        return {"type": "thinking", "thinking": block["text"], "signature": block["signature"]}
    return None


def _refused(block: ContentBlock, where: str) -> NoReturn:
    """Raise the error for a block :func:`_wire_block` has no form for."""
    kind = block.get("type")
    if kind == "reasoning":
        raise ProviderError(
            f"{NAME}: {where}: a reasoning block without a signature cannot be sent back "
            "as thinking (Anthropic requires the signature it issued)",
            kind="unsupported_block",
        )
    raise _unsupported(where, f"a block of type {kind!r}")


def wire_message(message: LLMMessage, m: int) -> list[dict[str, Any]]:
    """``messages[m]`` on the wire (one message)."""
    content = [
        _wire_block(block) or _refused(block, f"messages[{m}].content[{b}]")
        for b, block in enumerate(message["content"])
    ]
    return [{"role": message["role"], "content": content}]


def to_wire_messages(messages: list[LLMMessage]) -> list[dict[str, Any]]:
    return [wire for m, message in enumerate(messages) for wire in wire_message(message, m)]


def _model_version(model: str) -> tuple[int, int] | None:
    found = _VERSION.search(model)
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2) or 0)


def thinking_fields(
    thinking: ThinkingConfig, model: str, max_tokens: int | None
) -> tuple[dict[str, Any], int]:
    """The request fields for ``thinking`` and the ``max_tokens`` to send.

    Claude 4.6 and later (and ids without a version: mythos, fable, previews)
    think adaptively: ``thinking: {type: "adaptive"}`` with
    ``output_config.effort``. Opus 4.7 and later take nothing else; 4.6 still
    takes a ``budgetTokens``, sent as ``{type: "enabled", budget_tokens}``.
    Older models need a budget: ``budgetTokens``, else one for the effort
    (:data:`EFFORT_BUDGETS`), and ``max_tokens`` above it."""
    version = _model_version(model)
    adaptive = version is None or version >= (4, 6)
    adaptive_only = version is None or version >= (4, 7)
    if adaptive and (thinking.budget_tokens is None or adaptive_only):
        fields: dict[str, Any] = {"thinking": {"type": "adaptive"}}
        if thinking.effort is not None:
            fields["output_config"] = {"effort": thinking.effort}
        return fields, max_tokens or DEFAULT_MAX_TOKENS
    budget = thinking.budget_tokens or EFFORT_BUDGETS[thinking.effort or "medium"]
    budget = max(budget, MIN_THINKING_BUDGET)
    if max_tokens is not None and max_tokens <= budget:
        raise ProviderError(
            f"{NAME}: maxTokens ({max_tokens}) must be above the thinking budget ({budget} "
            f"tokens) for {model}: raise maxTokens or lower thinking.budgetTokens",
            kind="provider",
        )
    return {"thinking": {"type": "enabled", "budget_tokens": budget}}, (
        max_tokens or budget + DEFAULT_MAX_TOKENS
    )


# Blocks that may carry cache_control (thinking blocks may not).
_CACHEABLE = {"text", "image", "tool_use", "tool_result", "document"}


def mark_cache_prefix(messages: list[dict[str, Any]]) -> None:
    """Mark the last cacheable block of the last message: the conversation
    up to it is the prefix later turns read from the cache. The message is
    replaced by a marked copy (the adapter's WirePrefix keeps the unmarked
    one, which the next request sends without the mark)."""
    if not messages:
        return
    content = list(messages[-1]["content"])
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if block.get("type") in _CACHEABLE and not (block["type"] == "text" and not block["text"]):
            content[index] = {**block, "cache_control": dict(EPHEMERAL)}
            messages[-1] = {**messages[-1], "content": content}
            return


def base_url(config: AgentConfig) -> str:
    """The agent's ``baseURL``, else ``ANTHROPIC_BASE_URL``, else Anthropic's,
    without a trailing slash (a malformed variable is a ProviderError)."""
    return provider_base_url(config, _FACTS)


def headers(config: AgentConfig) -> dict[str, str]:
    """The key and API version every request carries (the messages and the model list)."""
    return {"x-api-key": required_key(config, _FACTS), "anthropic-version": API_VERSION}


class AnthropicAdapter:
    """See the module docstring."""

    name = NAME

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._url_found: str | None = None  # asked at the first request, where it can fail
        self._wire = WirePrefix()

    @property
    def _url(self) -> str:
        if self._url_found is None:
            self._url_found = base_url(self._config) + "/v1/messages"
        return self._url_found

    def _headers(self) -> dict[str, str]:
        return headers(self._config)

    def _body(
        self, messages: list[LLMMessage], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        caching = self._config.prompt_caching is not False
        body: dict[str, Any] = {
            "model": options.model,
            "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": self._wire.render(checked_messages(messages, options), wire_message),
        }
        if self._config.thinking is not None:
            fields, body["max_tokens"] = thinking_fields(
                self._config.thinking, options.model, options.max_tokens
            )
            body.update(fields)
        if options.system_prompt:
            body["system"] = (
                [{"type": "text", "text": options.system_prompt, "cache_control": EPHEMERAL}]
                if caching
                else options.system_prompt
            )
        body.update(options.sampling())
        if options.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in options.tools
            ]
            if caching:
                body["tools"][-1]["cache_control"] = EPHEMERAL
        if caching:
            mark_cache_prefix(body["messages"])
        if stream:
            body["stream"] = True
        return body

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        body = self._body(messages, options, stream=False)
        answer = request_json(
            self._url, self._headers(), body, provider=NAME, read_error=read_error
        )
        del body  # sent as bytes: the dict need not live while the provider thinks
        data = await answer
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise ProviderError(f"{NAME}: the response has no content list", kind="malformed")
        try:  # malformed_reply's mapping, inline: its context manager is per request
            return LLMResponse(
                content=[from_wire_block(block) for block in data["content"]],
                usage=usage_of(data.get("usage")),
                stop_reason=str(data.get("stop_reason") or "end_turn"),
                model=answered_model(data.get("model")),
            )
        except MALFORMED as error:
            raise malformed_error(NAME, error) from None

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self._body(messages, options, stream=True)
        state = StreamState()
        async with open_response(
            self._url, self._headers(), body, provider=NAME, read_error=read_error
        ) as response:
            async for batch in sse_batches(response, NAME):
                for sse in batch:
                    try:
                        text_delta = quick_text_delta(sse.data)
                        if text_delta is not None:  # nearly every event of a reply: one out
                            text_event = state.text_delta(*text_delta)
                        else:
                            text_event = None
                            events = state.feed(sse.event, event_json(sse.data, NAME))
                    except MALFORMED as error:  # malformed_reply's mapping, inline: per event
                        raise malformed_error(NAME, error) from None
                    if text_event is not None:
                        yield text_event
                        continue
                    for event in events:
                        yield event
                    if state.finished:
                        break
                if state.finished:
                    break
        if not state.finished:
            raise ProviderError(
                f"{NAME}: the stream ended before message_stop (cut mid-way)", kind="stream"
            )
        with malformed_reply(NAME):
            final = state.response()
        yield {"type": "done", "data": final}
