"""The OpenAI Responses API adapter (``POST {baseURL}/responses``).

Reasoning is carried between turns statelessly: requests say ``store: false``
(the host keeps the conversation) and ask for ``reasoning.encrypted_content``,
which goes back unchanged as ``providerMetadata.openai``; another provider's
reasoning has no Responses form and fails the run. The model name decides
whether reasoning parameters are sent, and a model refusing them gets the
request again without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from oma_host.core.errors import ProviderErrorKind
from oma_host.core.messages import ContentBlock, LLMMessage
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
)
from oma_host.providers.http import open_response, request_json
from oma_host.providers.openai import ERROR_PREFIX, read_error
from oma_host.providers.openai_target import OpenAITarget, tool_input, usage_of
from oma_host.providers.sse import event_json, sse_batches
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig
    from oma_host.core.results import TokenUsage

# Model names that do not reason: asking them for reasoning is a 400.
_PLAIN_MODELS = re.compile(r"(^|/)(gpt-3|gpt-4|chatgpt-)|-chat($|-)", re.IGNORECASE)
_REASONING_REFUSED = re.compile(r"encrypted content|reasoning", re.IGNORECASE)
_INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}


def _failure_kind(code: Any) -> ProviderErrorKind:
    """A failed response's or a stream error's kind, from its ``code``."""
    return "context_too_long" if code == "context_length_exceeded" else "provider"


def _unsupported(provider: str, where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{provider}: {where}: {what} has no Responses API representation",
        kind="unsupported_block",
    )


def _data_url(source: dict[str, Any]) -> str:
    if source["type"] == "url":
        return str(source["url"])
    return f"data:{source['media_type']};base64,{source['data']}"


def _output_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part["type"]
    if kind == "text":
        return {"type": "input_text", "text": part["text"]}
    if kind == "image":
        return {"type": "input_image", "image_url": _data_url(part["source"]), "detail": "auto"}
    source = part["source"]
    if source["type"] == "url":
        return {"type": "input_file", "file_url": source["url"], "filename": part["filename"]}
    return {"type": "input_file", "file_data": _data_url(source), "filename": part["filename"]}


def _function_output(block: ContentBlock) -> dict[str, Any]:
    content = block["content"]
    output: Any
    if isinstance(content, list):
        output = [_output_part(part) for part in content]
    else:
        output = ERROR_PREFIX + content if block.get("is_error") else content
    return {"type": "function_call_output", "call_id": block["tool_use_id"], "output": output}


def _user_items(message: LLMMessage, where: str, provider: str) -> list[dict[str, Any]]:
    """Tool outputs first (they answer the calls before them), then the rest."""
    outputs: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "input_text", "text": block["text"]})
        elif kind == "image":
            url = _data_url(block["source"])
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
        elif kind == "tool_result":
            outputs.append(_function_output(block))
        else:
            raise _unsupported(provider, f"{where}.content[{index}]", f"a user {kind} block")
    if parts:
        outputs.append({"role": "user", "content": parts})
    return outputs


def openai_metadata(block: ContentBlock) -> dict[str, Any]:
    metadata = block.get("providerMetadata")
    openai = metadata.get("openai") if isinstance(metadata, dict) else None
    return openai if isinstance(openai, dict) else {}


def _reasoning_item(block: ContentBlock, at: str, provider: str) -> dict[str, Any]:
    metadata = openai_metadata(block)
    item_id = metadata.get("itemId")
    if not isinstance(item_id, str):
        raise _unsupported(
            provider,
            at,
            "a reasoning block without providerMetadata.openai.itemId (another provider's "
            "thinking)",
        )
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": []}
    if block["text"]:
        item["summary"] = [{"type": "summary_text", "text": block["text"]}]
    if isinstance(metadata.get("encryptedContent"), str):
        item["encrypted_content"] = metadata["encryptedContent"]
    return item


def _assistant_items(message: LLMMessage, where: str, provider: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    texts: list[str] = []

    def flush() -> None:
        if texts:
            items.append({"role": "assistant", "content": "".join(texts)})
            texts.clear()

    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        at = f"{where}.content[{index}]"
        if kind == "text":
            texts.append(block["text"])
            continue
        flush()
        if kind == "tool_use":
            call: dict[str, Any] = {
                "type": "function_call",
                "call_id": block["id"],
                "name": block["name"],
                "arguments": json.dumps(block["input"]),
            }
            if isinstance(item_id := openai_metadata(block).get("itemId"), str):
                call["id"] = item_id
            items.append(call)
        elif kind == "reasoning":
            items.append(_reasoning_item(block, at, provider))
        else:
            raise _unsupported(provider, at, f"an assistant {kind} block")
    flush()
    return items


def input_items(message: LLMMessage, index: int, provider: str = "openai") -> list[dict[str, Any]]:
    """``messages[index]`` as Responses input items."""
    where = f"messages[{index}]"
    if message["role"] == "user":
        return _user_items(message, where, provider)
    return _assistant_items(message, where, provider)


def to_input_items(messages: list[LLMMessage], provider: str = "openai") -> list[dict[str, Any]]:
    return [
        item
        for index, message in enumerate(messages)
        for item in input_items(message, index, provider)
    ]


def _tool_use(item: dict[str, Any], provider: str) -> ContentBlock:
    arguments = item.get("arguments") or ""
    name = item["name"]
    parsed = tool_input(provider, name, arguments)
    block: ContentBlock = {"type": "tool_use", "id": item["call_id"], "name": name, "input": parsed}
    if isinstance(item.get("id"), str):
        block["providerMetadata"] = {"openai": {"itemId": item["id"]}}
    return block


def _reasoning_block(item: dict[str, Any]) -> ContentBlock:
    parts = item.get("summary") or item.get("content") or []
    metadata: dict[str, Any] = {"itemId": item["id"]}
    if isinstance(item.get("encrypted_content"), str):
        metadata["encryptedContent"] = item["encrypted_content"]
    return {
        "type": "reasoning",
        "text": "\n\n".join(str(part["text"]) for part in parts),
        "providerMetadata": {"openai": metadata},
    }


def from_output_item(item: dict[str, Any], provider: str) -> list[ContentBlock]:
    """The blocks of one output item; items of other kinds (server tools) are
    kept as they came."""
    kind = item.get("type")
    if kind == "message":
        blocks: list[ContentBlock] = []
        for part in item.get("content") or []:
            if part.get("type") == "output_text":
                blocks.append({"type": "text", "text": str(part["text"])})
            elif part.get("type") == "refusal":
                blocks.append({"type": "text", "text": str(part["refusal"])})
        return blocks
    if kind == "function_call":
        return [_tool_use(item, provider)]
    if kind == "reasoning":
        return [_reasoning_block(item)]
    return [dict(item)]


def _usage(data: dict[str, Any] | None) -> TokenUsage:
    return usage_of(data, "input_tokens", "output_tokens")


def _stop_reason(response: dict[str, Any], content: list[ContentBlock]) -> str:
    if response.get("status") == "incomplete":
        reason = (response.get("incomplete_details") or {}).get("reason")
        return _INCOMPLETE.get(str(reason), "end_turn")
    return "tool_use" if any(b.get("type") == "tool_use" for b in content) else "end_turn"


class ResponsesAdapter:
    """See the module docstring."""

    def __init__(self, config: AgentConfig, target: OpenAITarget) -> None:
        self._config = config
        self._target = target
        self.name = target.provider
        self._url = target.base_url + "/responses"
        # The models that refused the reasoning parameters: never asked again.
        self._refused: set[str] = set()
        self._wire = WirePrefix()

    def _items(self, message: LLMMessage, index: int) -> list[dict[str, Any]]:
        return input_items(message, index, self.name)

    def _asks_reasoning(self, model: str) -> bool:
        if model in self._refused:
            return False
        return self._config.thinking is not None or not _PLAIN_MODELS.search(model)

    def _body(
        self, messages: list[LLMMessage], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": options.model,
            "input": self._wire.render(checked_messages(messages, options), self._items),
            "store": False,
        }
        if options.system_prompt:
            body["instructions"] = options.system_prompt
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        body.update(options.sampling())
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    "strict": False,
                }
                for t in options.tools
            ]
        if self._asks_reasoning(options.model):
            body["include"] = ["reasoning.encrypted_content"]
            body["reasoning"] = {"summary": "auto"}
            thinking = self._config.thinking
            if thinking is not None and thinking.effort is not None:
                body["reasoning"]["effort"] = thinking.effort  # budgetTokens has no form here
        if stream:
            body["stream"] = True
        return body

    def _refused_reasoning(self, error: ProviderError, model: str) -> bool:
        """A 400 refusing the reasoning parameters: stop sending them to ``model``."""
        asked = self._asks_reasoning(model)
        if asked and error.status_code == 400 and _REASONING_REFUSED.search(str(error)):
            self._refused.add(model)
            return True
        return False

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        try:
            return await self._chat(messages, options)
        except ProviderError as error:
            if not self._refused_reasoning(error, options.model):
                raise
        return await self._chat(messages, options)

    async def _chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        body = self._body(messages, options, stream=False)
        answer = request_json(
            self._url, self._target.headers(), body, provider=self.name, read_error=read_error
        )
        del body  # sent as bytes: the dict need not live while the provider thinks
        data = await answer
        if not isinstance(data, dict) or not isinstance(data.get("output"), list):
            raise ProviderError(f"{self.name}: the response has no output list", kind="malformed")
        with malformed_reply(self.name):
            self._raise_failed(data)
            content = [
                block for item in data["output"] for block in from_output_item(item, self.name)
            ]
            return LLMResponse(
                content=content,
                usage=_usage(data.get("usage")),
                stop_reason=_stop_reason(data, content),
                model=answered_model(data.get("model")),
            )

    def _raise_failed(self, response: dict[str, Any]) -> None:
        if response.get("status") == "failed":
            error = response.get("error") or {}
            raise ProviderError(
                f"{self.name}: {error.get('message', 'the response failed')} "
                f"({error.get('code', 'error')})",
                kind=_failure_kind(error.get("code")),
            )

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        started = False
        try:
            async for event in self._stream(messages, options):
                started = True
                yield event
        except ProviderError as error:
            if started or not self._refused_reasoning(error, options.model):
                raise
            async for event in self._stream(messages, options):
                yield event

    async def _stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self._body(messages, options, stream=True)
        state = _StreamState(self.name)
        headers = self._target.headers()
        async with open_response(
            self._url, headers, body, provider=self.name, read_error=read_error
        ) as response:
            async for batch in sse_batches(response, self.name):
                for sse in batch:
                    try:
                        events = state.feed(event_json(sse.data, self.name))
                        if state.final is not None:
                            self._raise_failed(state.final)
                    except MALFORMED as error:  # malformed_reply's mapping, inline: per event
                        raise malformed_error(self.name, error) from None
                    for event in events:
                        yield event
                    if state.final is not None:
                        break
                if state.final is not None:
                    break
        if state.final is None:
            raise ProviderError(
                f"{self.name}: the stream ended before response.completed (cut mid-way)",
                kind="stream",
            )
        with malformed_reply(self.name):
            final = state.response()
        yield {"type": "done", "data": final}


class _StreamState:
    """Assembles the reply from Responses stream events: text and reasoning
    summaries as deltas, each output item whole from ``output_item.done``."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.items: dict[int, dict[str, Any]] = {}
        self.final: dict[str, Any] | None = None

    def feed(self, data: Any) -> list[ProviderEvent]:
        if not isinstance(data, dict):
            raise ProviderError(
                f"{self.provider}: a stream event is not an object", kind="malformed"
            )
        kind = data.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [{"type": "text", "data": str(data["delta"])}]
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [{"type": "reasoning", "data": str(data["delta"])}]
        if kind == "response.output_item.done":
            item = data["item"]
            self.items[int(data["output_index"])] = item
            if item.get("type") == "function_call":
                return [{"type": "tool_use", "data": _tool_use(item, self.provider)}]
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            self.final = data["response"]
        elif kind == "error":
            raise ProviderError(
                f"{self.provider}: {data.get('message', 'stream error')} "
                f"({data.get('code') or 'error'})",
                kind=_failure_kind(data.get("code")),
            )
        # Other events (created, in_progress, part and argument deltas the
        # done items repeat, events added later) carry nothing more.
        return []

    def response(self) -> LLMResponse:
        final = self.final or {}
        items = [self.items[index] for index in sorted(self.items)]
        if not items:  # a server that sends the items only in the final response
            items = list(final.get("output") or [])
        content = [block for item in items for block in from_output_item(item, self.provider)]
        return LLMResponse(
            content=content,
            usage=_usage(final.get("usage")),
            stop_reason=_stop_reason(final, content),
            model=answered_model(final.get("model")),
        )
