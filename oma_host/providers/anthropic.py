"""The Anthropic Messages API adapter (``POST {baseURL}/v1/messages``).

Blocks map both ways: text; image (base64 source); tool_use; tool_result
with rich parts (text, image, and file as a ``document``); reasoning as
``thinking`` with its signature, or ``redacted_thinking`` with its data,
echoed back unchanged. Streaming reads the SSE events with :mod:`oma_host.providers.sse`.

``thinking`` maps as :func:`thinking_fields` says (adaptive thinking with an
effort on the models that take it, ``budget_tokens`` on the older ones).
``promptCaching`` (on unless false) marks the system prompt, the last tool and
the last block of the conversation with ``cache_control: {type: "ephemeral"}``:
the whole request becomes the prefix the next turn reads from the cache.
Usage keeps ``cache_creation_input_tokens`` and ``cache_read_input_tokens``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, NoReturn

from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.provider_facts import facts_of
from oma_host.core.results import TokenUsage
from oma_host.providers.base import (
    MALFORMED,
    ChatOptions,
    LLMResponse,
    ProviderError,
    ProviderEvent,
    checked_messages,
    malformed_error,
    malformed_reply,
    required_key,
)
from oma_host.providers.http import open_response, request_json, too_long_reader
from oma_host.providers.sse import event_json, sse_batches
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig, ThinkingConfig

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_NAME = "anthropic"
_FACTS = facts_of(_NAME)
EPHEMERAL = {"type": "ephemeral"}
# budget_tokens for an effort on the models that take no adaptive thinking.
EFFORT_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
MIN_THINKING_BUDGET = 1024
# claude-opus-4-6, claude-sonnet-4-5-20250929, claude-3-7-sonnet-20250219, claude-opus-5
_VERSION = re.compile(r"claude-(?:[a-z]+-)?(\d+)(?:-(\d)(?!\d))?")
# json.loads's own string reader: a string's value from after its opening
# quote, and where it ends (strict: no control character).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# A text delta's data, as Anthropic (no spaces) and json.dumps (a space after
# each separator) write it, up to its text's opening quote; then, when the
# text holds no escape and no control character (so it is its own JSON
# string's value) and the data ends with the two braces, the text; see
# _text_delta.
_TEXT_DELTA = re.compile(
    r'\{"type": ?"content_block_delta", ?"index": ?(0|[1-9][0-9]*), ?'
    r'"delta": ?\{"type": ?"text_delta", ?"text": ?"'
    r'(?:([^"\\\x00-\x1f]*)"\}\}\Z)?'
)


def _too_long(status: int, _body: Any, message: str) -> bool:
    """Anthropic's 400 for a prompt over the window ("prompt is too long:
    N tokens > M maximum"), or for one that leaves the reply no room
    ("input length and `max_tokens` exceed context limit")."""
    lowered = message.lower()
    return status == 400 and ("prompt is too long" in lowered or "exceed context limit" in lowered)


read_error = too_long_reader(_too_long)

# Anthropic's error types and the HTTP status each is answered with
# (https://docs.claude.com/en/api/errors).
_STREAM_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{_NAME}: {where}: {what} cannot be sent to the Anthropic Messages API",
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


def _tool_use(block: dict[str, Any]) -> dict[str, Any]:
    """tool_use has the same fields in both directions."""
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]}


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
        return _tool_use(block)
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
            f"{_NAME}: {where}: a reasoning block without a signature cannot be sent back "
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


def from_wire_block(block: dict[str, Any]) -> ContentBlock:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return _tool_use(block)
    if kind == "thinking":
        return {
            "type": "reasoning",
            "text": block["thinking"],
            "signature": block.get("signature", ""),
        }
    if kind == "redacted_thinking":
        return {"type": "reasoning", "text": "", "redactedData": block["data"]}
    # Unknown reply blocks (server tools, citations...) are kept as they came.
    return dict(block)


def _usage(data: dict[str, Any] | None) -> TokenUsage:
    data = data or {}
    usage: TokenUsage = {
        "input_tokens": int(data.get("input_tokens") or 0),
        "output_tokens": int(data.get("output_tokens") or 0),
    }
    for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if data.get(name):  # reported when not zero, as by every adapter
            usage[name] = int(data[name])
    return usage


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
            f"{_NAME}: maxTokens ({max_tokens}) must be above the thinking budget ({budget} "
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
    """The agent's ``baseURL``, else Anthropic's, without a trailing slash."""
    return (config.base_url or _FACTS.default_base_url or "").rstrip("/")


def headers(config: AgentConfig) -> dict[str, str]:
    """The key and API version every request carries (the messages and the model list)."""
    return {"x-api-key": required_key(config, _FACTS), "anthropic-version": API_VERSION}


class AnthropicAdapter:
    """See the module docstring."""

    name = _NAME

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._url = base_url(config) + "/v1/messages"
        self._wire = WirePrefix()

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
            self._url, self._headers(), body, provider=_NAME, read_error=read_error
        )
        del body  # sent as bytes: the dict need not live while the provider thinks
        data = await answer
        if not isinstance(data, dict) or not isinstance(data.get("content"), list):
            raise ProviderError(f"{_NAME}: the response has no content list", kind="malformed")
        try:  # malformed_reply's mapping, inline: its context manager is per request
            return LLMResponse(
                content=[from_wire_block(block) for block in data["content"]],
                usage=_usage(data.get("usage")),
                stop_reason=str(data.get("stop_reason") or "end_turn"),
            )
        except MALFORMED as error:
            raise malformed_error(_NAME, error) from None

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self._body(messages, options, stream=True)
        state = _StreamState()
        async with open_response(
            self._url, self._headers(), body, provider=_NAME, read_error=read_error
        ) as response:
            async for batch in sse_batches(response, _NAME):
                for sse in batch:
                    try:
                        text_delta = _text_delta(sse.data)
                        if text_delta is not None:  # nearly every event of a reply: one out
                            text_event = state.text_delta(*text_delta)
                        else:
                            text_event = None
                            events = state.feed(sse.event, event_json(sse.data, _NAME))
                    except MALFORMED as error:  # malformed_reply's mapping, inline: per event
                        raise malformed_error(_NAME, error) from None
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
                f"{_NAME}: the stream ended before message_stop (cut mid-way)", kind="stream"
            )
        with malformed_reply(_NAME):
            final = state.response()
        yield {"type": "done", "data": final}


def _text_delta(data: str) -> tuple[int, str] | None:
    """The index and text of a ``text_delta`` event's data, read without
    building its two objects: when the data is exactly
    ``{"type":"content_block_delta","index":N,"delta":{"type":"text_delta","text":"..."}}``
    (no space, or one after each ``:`` and ``,``), ``json.loads`` would read
    the same index and text: the text as it stands when it holds no escape
    and no control character, else by the same ``scanstring``. Any other
    data, a bad string included, is None: it takes ``json.loads``'s path."""
    delta = _TEXT_DELTA.match(data)
    if delta is None:
        return None
    text = delta[2]
    if text is None:  # an escape, a control character, or something after the text
        try:
            text, end = _scanstring(data, delta.end())
        except ValueError:
            return None
        if data[end:] != "}}":
            return None
    return int(delta[1]), text


class _StreamState:
    """Assembles content blocks from Messages API stream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        # Text, thinking and signature deltas after each field's first, by (index, field).
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.usage: TokenUsage = {"input_tokens": 0, "output_tokens": 0}
        self.stop_reason = "end_turn"
        self.finished = False

    def feed(self, name: str, data: Any) -> list[ProviderEvent]:
        if not isinstance(data, dict):
            raise ProviderError(f"{_NAME}: a stream event is not an object", kind="malformed")
        kind = data.get("type", name)
        if kind == "message_start":
            self.usage = _usage(data.get("message", {}).get("usage"))
        elif kind == "content_block_start":
            index = data["index"]
            self.blocks[index] = dict(data["content_block"])
            for field in ("text", "thinking", "signature"):  # a block started again
                self.parts.pop((index, field), None)
        elif kind == "content_block_delta":
            return self._delta(data["index"], data["delta"])
        elif kind == "content_block_stop":
            return self._stop(data["index"])
        elif kind == "message_delta":
            self.stop_reason = data.get("delta", {}).get("stop_reason") or self.stop_reason
            # Its usage is cumulative; the input counts may be there too, or not.
            counts = {k: v for k, v in (data.get("usage") or {}).items() if v is not None}
            self.usage = _usage({**self.usage, **counts})
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            error = data.get("error", {})
            # An error inside a 200 stream (an overload, most often) carries
            # the status its type has as an answer, as the failed request would.
            status = _STREAM_ERROR_STATUS.get(error.get("type"))
            raise ProviderError(
                f"{_NAME}: {error.get('message', 'stream error')} ({error.get('type', 'error')})",
                status_code=status,
                kind="auth" if status in (401, 403) else "provider",
            )
        # ping and event types added later are ignored, as Anthropic asks.
        return []

    def _append(self, index: int, field: str, piece: Any) -> None:
        """Add ``piece`` to the block's ``field``. The first piece is added at
        once (a field or piece of the wrong type fails as it always did), the
        rest are kept in a list and joined by :meth:`_settled`: adding each
        to the string would copy the text so far once per delta."""
        key = (index, field)
        parts = self.parts.get(key)
        if parts is None:
            block = self.blocks[index]
            block[field] = block.get(field, "") + piece
            self.parts[key] = []
        elif type(piece) is str:
            parts.append(piece)
        else:  # the error adding it to the text raised
            raise TypeError(f'can only concatenate str (not "{type(piece).__name__}") to str')

    def _settled(self, index: int) -> dict[str, Any]:
        """The block with the pieces kept by :meth:`_append` joined in."""
        block = self.blocks[index]
        for field in ("text", "thinking", "signature"):
            parts = self.parts.pop((index, field), None)
            if parts:
                block[field] += "".join(parts)
        return block

    def text_delta(self, index: int, text: str) -> ProviderEvent:
        """A ``content_block_delta`` whose delta is ``text_delta``: its event."""
        if index not in self.blocks:
            raise KeyError(index)
        self._append(index, "text", text)
        return {"type": "text", "data": text}

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ProviderEvent]:
        if index not in self.blocks:
            raise KeyError(index)
        kind = delta.get("type")
        if kind == "text_delta":
            return [self.text_delta(index, delta["text"])]
        if kind == "thinking_delta":
            thinking = delta["thinking"]
            self._append(index, "thinking", thinking)
            return [{"type": "reasoning", "data": thinking}]
        if kind == "signature_delta":
            self._append(index, "signature", delta["signature"])
        elif kind == "input_json_delta":
            self.partial_json.setdefault(index, []).append(delta["partial_json"])
        return []

    def _stop(self, index: int) -> list[ProviderEvent]:
        block = self._settled(index)
        if block.get("type") == "tool_use":
            text = "".join(self.partial_json.pop(index, []))
            try:
                block["input"] = json.loads(text) if text else {}
            except ValueError:
                raise ProviderError(
                    f"{_NAME}: tool_use {block.get('name')!r} input is not valid JSON",
                    kind="malformed",
                ) from None
            return [{"type": "tool_use", "data": from_wire_block(block)}]
        return []

    def response(self) -> LLMResponse:
        content = [from_wire_block(self._settled(i)) for i in sorted(self.blocks)]
        return LLMResponse(content=content, usage=self.usage, stop_reason=self.stop_reason)
