"""The OpenAI Chat Completions adapter, also for OpenAI-compatible servers and Azure.

Blocks with no Chat Completions form (reasoning, images in assistant turns)
fail the run rather than being dropped. Gemini's compatible endpoint refuses a
next turn without its tool calls' signatures, so they are kept as
``providerMetadata.google.thoughtSignature`` and sent back exactly.
docs/providers.md, "How blocks map".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.results import TokenUsage
from oma_host.providers.base import (
    ChatOptions,
    LLMResponse,
    ProviderError,
    ProviderEvent,
    answered_model,
    checked_messages,
    malformed_reply,
)
from oma_host.providers.http import open_response, request_json, too_long_reader
from oma_host.providers.openai_target import (
    OpenAITarget,
    openai_target,
    openai_too_long,
    tool_input,
    usage_of,
)
from oma_host.providers.sse import event_json, sse_batches
from oma_host.providers.wire_prefix import WireMessages, WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

_NAME = "openai"
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
ERROR_PREFIX = "[error] "
read_error = too_long_reader(openai_too_long)


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{_NAME}: {where}: {what} has no Chat Completions representation", kind="unsupported_block"
    )


def _tool_message(block: ContentBlock, where: str) -> dict[str, Any]:
    content = block["content"]
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if part["type"] != "text":
                raise _unsupported(
                    f"{where}.content[{index}]", f"a tool result {part['type']} part"
                )
            texts.append({"type": "text", "text": part["text"]})
        wire_content: Any = texts
    else:
        wire_content = content
    if block.get("is_error"):
        wire_content = ERROR_PREFIX + str(wire_content)  # is_error implies string content
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": wire_content}


def _user_messages(message: LLMMessage, where: str) -> list[dict[str, Any]]:
    """Tool results first (they must follow the assistant's tool calls), then the rest."""
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(message["content"]):
        at = f"{where}.content[{index}]"
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            source = block["source"]
            url = f"data:{source['media_type']};base64,{source['data']}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif kind == "tool_result":
            tool_messages.append(_tool_message(block, at))
        else:
            raise _unsupported(at, f"a user {kind} block")
    if parts:
        tool_messages.append({"role": "user", "content": parts})
    return tool_messages


def _assistant_message(message: LLMMessage, where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            call: dict[str, Any] = {
                "id": block["id"],
                "type": "function",
                "function": {"name": block["name"], "arguments": json.dumps(block["input"])},
            }
            if (signature := thought_signature(block)) is not None:
                call["extra_content"] = {"google": {"thought_signature": signature}}
            calls.append(call)
        else:
            raise _unsupported(f"{where}.content[{index}]", f"an assistant {kind} block")
    wire: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        wire["tool_calls"] = calls
    return wire


def wire_messages(message: LLMMessage, index: int) -> list[dict[str, Any]]:
    """``messages[index]`` on the wire: an assistant message, or a user
    message's tool results and the rest."""
    where = f"messages[{index}]"
    if message["role"] == "user":
        return _user_messages(message, where)
    return [_assistant_message(message, where)]


def with_system(system: str | None, wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if not system:
        return wire
    first = {"role": "system", "content": system}
    return wire.prepended(first) if isinstance(wire, WireMessages) else [first, *wire]


def to_wire_messages(messages: list[LLMMessage], system: str | None) -> list[dict[str, Any]]:
    converted = [
        wire for index, message in enumerate(messages) for wire in wire_messages(message, index)
    ]
    return with_system(system, converted)


def thought_signature(block: ContentBlock) -> str | None:
    """The Gemini thought signature a tool_use block carries, if any."""
    metadata = block.get("providerMetadata")
    google = metadata.get("google") if isinstance(metadata, dict) else None
    signature = google.get("thoughtSignature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) else None


def _signature_of(call: dict[str, Any]) -> str | None:
    """``extra_content.google.thought_signature`` of a (streamed) tool call."""
    extra = call.get("extra_content")
    google = extra.get("google") if isinstance(extra, dict) else None
    signature = google.get("thought_signature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) else None


def _tool_use(
    call_id: str, name: str, arguments: str, signature: str | None = None
) -> ContentBlock:
    parsed = tool_input(_NAME, name, arguments)
    block: ContentBlock = {"type": "tool_use", "id": call_id, "name": name, "input": parsed}
    if signature is not None:
        block["providerMetadata"] = {"google": {"thoughtSignature": signature}}
    return block


def _usage(data: dict[str, Any] | None) -> TokenUsage:
    return usage_of(data, "prompt_tokens", "completion_tokens")


class OpenAIAdapter:
    """See the module docstring."""

    name = _NAME

    def __init__(self, config: AgentConfig, target: OpenAITarget | None = None) -> None:
        self._config = config
        self._target = target or openai_target(config)
        self.name = self._target.provider
        self._url = self._target.base_url + "/chat/completions"
        self._wire = WirePrefix()

    def _headers(self) -> dict[str, str]:
        return self._target.headers()

    def _body(
        self, messages: list[LLMMessage], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": options.model,
            "messages": with_system(
                options.system_prompt,
                self._wire.render(checked_messages(messages, options), wire_messages),
            ),
        }
        if options.max_tokens is not None:
            body[self._target.token_limit_field] = options.max_tokens
        if self._config.thinking is not None and self._config.thinking.effort is not None:
            body["reasoning_effort"] = self._config.thinking.effort  # no budget form here
        body.update(options.sampling())
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in options.tools
            ]
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        body = self._body(messages, options, stream=False)
        answer = request_json(
            self._url, self._headers(), body, provider=self.name, read_error=read_error
        )
        del body  # sent as bytes: the dict need not live while the provider thinks
        data = await answer
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(
                f"{self.name}: the response has no choices", kind="malformed"
            ) from None
        with malformed_reply(self.name):
            content: list[ContentBlock] = []
            if message.get("content"):
                content.append({"type": "text", "text": str(message["content"])})
            if message.get("refusal"):
                content.append({"type": "text", "text": str(message["refusal"])})
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                content.append(
                    _tool_use(
                        call["id"],
                        function.get("name", ""),
                        function.get("arguments", ""),
                        _signature_of(call),
                    )
                )
            return LLMResponse(
                content=content,
                usage=_usage(data.get("usage")),
                stop_reason=_STOP_REASONS.get(choice.get("finish_reason") or "stop", "end_turn"),
                model=answered_model(data.get("model")),
            )

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self._body(messages, options, stream=True)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage: TokenUsage = {"input_tokens": 0, "output_tokens": 0}
        finish: str | None = None
        # Every chunk names the model; read until one does (Azure's first,
        # its prompt filter results, names none).
        model: str | None = None
        done = False
        async with open_response(
            self._url, self._headers(), body, provider=self.name, read_error=read_error
        ) as response:
            with malformed_reply(self.name):
                async for batch in sse_batches(response, self.name):
                    for sse in batch:
                        if sse.data.strip() == "[DONE]":
                            done = True
                            break
                        chunk = event_json(sse.data, self.name)
                        if not isinstance(chunk, dict):
                            continue
                        if isinstance(chunk.get("error"), dict):
                            raise ProviderError(
                                f"{self.name}: {chunk['error'].get('message', 'error')}"
                            )
                        if model is None:
                            model = answered_model(chunk.get("model"))
                        if chunk.get("usage"):
                            usage = _usage(chunk["usage"])
                        for choice in chunk.get("choices") or []:
                            delta = choice.get("delta") or {}
                            if piece := delta.get("content"):
                                text.append(piece)
                                yield {"type": "text", "data": piece}
                            for call in delta.get("tool_calls") or []:
                                slot = calls.setdefault(
                                    call.get("index", 0),
                                    {"id": "", "name": "", "arguments": [], "signature": None},
                                )
                                function = call.get("function") or {}
                                slot["signature"] = _signature_of(call) or slot["signature"]
                                slot["id"] = call.get("id") or slot["id"]
                                slot["name"] = function.get("name") or slot["name"]
                                slot["arguments"].append(function.get("arguments") or "")
                            finish = choice.get("finish_reason") or finish
                    if done:
                        break
        if not done and finish is None:
            raise ProviderError(
                f"{self.name}: the stream ended before a finish_reason (cut mid-way)", kind="stream"
            )
        content: list[ContentBlock] = [{"type": "text", "text": "".join(text)}] if text else []
        for index in sorted(calls):
            slot = calls[index]
            block = _tool_use(
                slot["id"], slot["name"], "".join(slot["arguments"]), slot["signature"]
            )
            content.append(block)
            yield {"type": "tool_use", "data": block}
        stop = _STOP_REASONS.get(finish or "stop", "end_turn")
        final = LLMResponse(content=content, usage=usage, stop_reason=stop, model=model)
        yield {"type": "done", "data": final}
