"""The Gemini API adapter, native (``generateContent`` and ``streamGenerateContent``).

The key goes in ``x-goog-api-key``, never in the URL. Gemini's
``thoughtSignature`` stays on the block that carried it
(``providerMetadata.google``) and goes back unchanged, as Gemini requires for
the next turn; function-call ids Gemini did not give are made up here and never
sent. docs/providers.md, "How blocks map".
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from oma_host.core.errors import ProviderErrorKind
from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.provider_facts import facts_of
from oma_host.core.results import TokenUsage
from oma_host.providers.base import (
    MALFORMED,
    ChatOptions,
    LLMResponse,
    ModelInfo,
    ProviderError,
    ProviderEvent,
    answered_model,
    checked_messages,
    malformed_error,
    malformed_reply,
    provider_base_url,
    required_key,
)
from oma_host.providers.http import error_message, open_response, request_json
from oma_host.providers.sse import event_json, sse_batches
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig, ThinkingConfig

API_VERSION = "v1beta"
_NAME = "gemini"
_FACTS = facts_of(_NAME)
# Ids made up for function calls Gemini gave none; they never go back.
_LOCAL_ID = "gemini_call_"
_STOP_REASONS = {"STOP": "end_turn", "MAX_TOKENS": "max_tokens"}
_MAX_PAGES = 20  # of the model list
# thinkingBudget for an effort on models that take no thinkingLevel (Gemini 2.5).
EFFORT_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576}
# Gemini's error statuses that mean the key was refused (it answers 400 to a bad key).
_AUTH_STATUSES = {"UNAUTHENTICATED", "PERMISSION_DENIED"}


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{_NAME}: {where}: {what} cannot be sent to the Gemini API", kind="unsupported_block"
    )


def thought_signature(block: ContentBlock) -> str | None:
    """The Gemini thought signature a block carries, if any."""
    metadata = block.get("providerMetadata")
    google = metadata.get("google") if isinstance(metadata, dict) else None
    signature = google.get("thoughtSignature") if isinstance(google, dict) else None
    return signature if isinstance(signature, str) and signature else None


def _signed(part: dict[str, Any], block: ContentBlock) -> dict[str, Any]:
    if (signature := thought_signature(block)) is not None:
        part["thoughtSignature"] = signature
    return part


def _inline(source: dict[str, Any], where: str, what: str) -> dict[str, Any]:
    if source.get("type") != "base64":
        raise _unsupported(where, f"{what} by URL (Gemini takes inline data or its Files API)")
    return {"inlineData": {"mimeType": source["media_type"], "data": source["data"]}}


def _response_payload(block: ContentBlock, where: str) -> tuple[dict[str, Any], list[Any]]:
    """A tool result as ``functionResponse.response`` and the media parts that
    go with it (Gemini 3 reads them as the response's own ``parts``)."""
    content = block["content"]
    if isinstance(content, str):
        key = "error" if block.get("is_error") else "output"
        return {key: content}, []
    texts: list[str] = []
    media: list[Any] = []
    for index, part in enumerate(content):
        if part["type"] == "text":
            texts.append(part["text"])
        else:
            media.append(_inline(part["source"], f"{where}.content[{index}]", part["type"]))
    return {"output": "\n".join(texts)}, media


def _call_name(messages: list[LLMMessage], index: int, call_id: str) -> str | None:
    """The function name of the tool_use ``call_id`` (a functionResponse is
    named after its call): looked for from ``messages[index]`` back, where a
    call stands before its result, then after it."""
    order = [*range(index, -1, -1), *range(index + 1, len(messages))]
    for position in order:
        for block in messages[position]["content"]:
            if block.get("type") == "tool_use" and block.get("id") == call_id:
                return str(block["name"])
    return None


def to_wire_part(
    block: ContentBlock, where: str, names: Callable[[str], str | None]
) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return _signed({"text": block["text"]}, block)
    if kind == "image":
        return _inline(block["source"], where, "an image")
    if kind == "tool_use":
        call: dict[str, Any] = {"name": block["name"], "args": block["input"]}
        if not block["id"].startswith(_LOCAL_ID):
            call["id"] = block["id"]
        return _signed({"functionCall": call}, block)
    if kind == "tool_result":
        call_id = block["tool_use_id"]
        name = names(call_id)
        if name is None:
            raise ProviderError(
                f"{_NAME}: {where}: tool_result {call_id!r} answers no tool_use in the "
                "conversation (Gemini names a function response after its call)",
                kind="unsupported_block",
            )
        response, media = _response_payload(block, where)
        answer: dict[str, Any] = {"name": name, "response": response}
        if not call_id.startswith(_LOCAL_ID):
            answer["id"] = call_id
        if media:
            answer["parts"] = media
        return {"functionResponse": answer}
    if kind == "reasoning":
        if "redactedData" in block:
            raise _unsupported(where, "a redacted reasoning block (another provider's)")
        return _signed({"text": block["text"], "thought": True}, block)
    raise _unsupported(where, f"a block of type {kind!r}")


def wire_content(messages: list[LLMMessage], m: int) -> list[dict[str, Any]]:
    """``messages[m]`` as a Gemini content (its tool results named from the
    calls in ``messages``)."""
    message = messages[m]

    def names(call_id: str) -> str | None:
        return _call_name(messages, m, call_id)

    parts = [
        to_wire_part(block, f"messages[{m}].content[{b}]", names)
        for b, block in enumerate(message["content"])
    ]
    return [{"role": "model" if message["role"] == "assistant" else "user", "parts": parts}]


def to_wire_contents(messages: list[LLMMessage]) -> list[dict[str, Any]]:
    return [content for m in range(len(messages)) for content in wire_content(messages, m)]


def from_wire_part(part: dict[str, Any]) -> ContentBlock | None:
    """One reply part as a block; None for parts with nothing to keep."""
    signature = part.get("thoughtSignature")
    block: ContentBlock
    if "functionCall" in part:
        call = part["functionCall"]
        args = call.get("args") or {}
        if not isinstance(args, dict):
            raise ProviderError(
                f"{_NAME}: the args of function call {call.get('name')!r} are not an object",
                kind="malformed",
            )
        call_id = call.get("id") or f"{_LOCAL_ID}{uuid.uuid4().hex[:16]}"
        block = {"type": "tool_use", "id": str(call_id), "name": str(call["name"]), "input": args}
    elif "text" in part and (part["text"] or signature):
        kind = "reasoning" if part.get("thought") else "text"
        block = {"type": kind, "text": str(part["text"])}
    elif signature:  # a signature alone (it may come so at the end of a stream)
        block = {"type": "text", "text": ""}
    else:
        return None  # an empty text part (a stream's last chunk) or a kind kept nowhere
    if signature:
        block["providerMetadata"] = {"google": {"thoughtSignature": str(signature)}}
    return block


def usage_of(data: dict[str, Any] | None) -> TokenUsage:
    """Gemini's usageMetadata. ``promptTokenCount`` includes the cached input
    and ``candidatesTokenCount`` leaves out the thoughts; here input excludes
    the cache and output includes the thoughts, as the other providers count."""
    data = data or {}
    prompt = int(data.get("promptTokenCount") or 0) + int(data.get("toolUsePromptTokenCount") or 0)
    cached = int(data.get("cachedContentTokenCount") or 0)
    thoughts = int(data.get("thoughtsTokenCount") or 0)
    usage: TokenUsage = {
        "input_tokens": max(0, prompt - cached),
        "output_tokens": int(data.get("candidatesTokenCount") or 0) + thoughts,
    }
    if cached:
        usage["cache_read_input_tokens"] = cached
    if thoughts:
        usage["reasoning_tokens"] = thoughts
    return usage


def _blocked(data: dict[str, Any]) -> ProviderError | None:
    feedback = data.get("promptFeedback") or {}
    if feedback.get("blockReason") and not data.get("candidates"):
        return ProviderError(
            f"{_NAME}: the prompt was blocked ({feedback['blockReason']})", kind="provider"
        )
    return None


def _stop_reason(finish: str | None, content: list[ContentBlock]) -> str:
    if any(block.get("type") == "tool_use" for block in content):
        return "tool_use"
    return _STOP_REASONS.get(finish or "STOP", str(finish).lower())


def read_error(response: httpx.Response, data: bytes) -> tuple[str, ProviderErrorKind]:
    """``{error: {code, message, status}}``: the message with its status,
    ``auth`` for a refused key (Gemini answers a bad key with 400), and
    ``context_too_long`` for a request over the model's window."""
    status = ""
    try:
        error = json.loads(data).get("error") or {}
        status = str(error.get("status") or "")
        details = json.dumps(error.get("details") or [])
    except (ValueError, AttributeError):
        details = ""
    refused = response.status_code in (401, 403) or status in _AUTH_STATUSES
    refused = refused or "API_KEY_INVALID" in details
    message = error_message(data) + (f" ({status})" if status else "")
    if refused:
        return message, "auth"
    # "The input token count (N) exceeds the maximum number of tokens allowed (M)."
    too_long = response.status_code == 400 and "exceeds the maximum number of tokens" in message
    return message, "context_too_long" if too_long else "provider"


_GEMINI_3 = re.compile(r"gemini-(\d+)")


def thinking_config(thinking: ThinkingConfig, model: str) -> dict[str, Any]:
    """``budgetTokens`` as ``thinkingBudget``; an effort as ``thinkingLevel``
    on Gemini 3 and later, else as a budget (Gemini 2.5 takes no level)."""
    config: dict[str, Any] = {"includeThoughts": True}
    if thinking.budget_tokens is not None:
        config["thinkingBudget"] = thinking.budget_tokens
    elif thinking.effort is not None:
        version = _GEMINI_3.search(model)
        if version is None or int(version.group(1)) >= 3:
            config["thinkingLevel"] = thinking.effort.upper()  # the enum's names: LOW, HIGH
        else:
            config["thinkingBudget"] = EFFORT_BUDGETS[thinking.effort]
    return config


class GeminiAdapter:
    """See the module docstring."""

    name = _NAME

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._base_found: str | None = None  # asked at the first request, where it can fail
        self._wire = WirePrefix()

    @property
    def _base(self) -> str:
        if self._base_found is None:
            self._base_found = provider_base_url(self._config, _FACTS)
        return self._base_found

    def _url(self, model: str, stream: bool) -> str:
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        name = quote(model.removeprefix("models/"), safe="")
        return f"{self._base}/{API_VERSION}/models/{name}:{method}"

    def _headers(self) -> dict[str, str]:
        return {"x-goog-api-key": required_key(self._config, _FACTS)}

    def _body(self, messages: list[LLMMessage], options: ChatOptions) -> dict[str, Any]:
        checked = checked_messages(messages, options)
        contents = self._wire.render(checked, lambda _message, m: wire_content(checked, m))
        body: dict[str, Any] = {"contents": contents}
        if options.system_prompt:
            body["systemInstruction"] = {"parts": [{"text": options.system_prompt}]}
        if options.tools:
            declarations = [
                {
                    "name": t.name,
                    "description": t.description,
                    "parametersJsonSchema": t.input_schema,
                }
                for t in options.tools
            ]
            body["tools"] = [{"functionDeclarations": declarations}]
        generation: dict[str, Any] = {}
        if options.max_tokens is not None:
            generation["maxOutputTokens"] = options.max_tokens
        generation.update(options.sampling("topP"))
        if self._config.thinking is not None:
            generation["thinkingConfig"] = thinking_config(self._config.thinking, options.model)
        if generation:
            body["generationConfig"] = generation
        return body

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        body = self._body(messages, options)
        url = self._url(options.model, stream=False)
        data = await request_json(url, self._headers(), body, provider=_NAME, read_error=read_error)
        if not isinstance(data, dict):
            raise ProviderError(f"{_NAME}: the response is not an object", kind="malformed")
        if (blocked := _blocked(data)) is not None:
            raise blocked
        with malformed_reply(_NAME):
            candidate = data["candidates"][0]
            parts = (candidate.get("content") or {}).get("parts") or []
            content = [block for part in parts if (block := from_wire_part(part)) is not None]
            return LLMResponse(
                content=content,
                usage=usage_of(data.get("usageMetadata")),
                stop_reason=_stop_reason(candidate.get("finishReason"), content),
                model=answered_model(data.get("modelVersion")),
            )

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        body = self._body(messages, options)
        url = self._url(options.model, stream=True)
        state = _StreamState()
        async with open_response(
            url, self._headers(), body, provider=_NAME, read_error=read_error
        ) as response:
            async for batch in sse_batches(response, _NAME):
                for sse in batch:
                    try:
                        events = state.feed(event_json(sse.data, _NAME))
                    except MALFORMED as error:  # malformed_reply's mapping, inline: per event
                        raise malformed_error(_NAME, error) from None
                    for event in events:
                        yield event
        if state.finish is None:
            raise ProviderError(
                f"{_NAME}: the stream ended before a finishReason (cut mid-way)", kind="stream"
            )
        content = state.content
        stop = _stop_reason(state.finish, content)
        yield {
            "type": "done",
            "data": LLMResponse(
                content=content, usage=state.usage, stop_reason=stop, model=state.model
            ),
        }


class _StreamState:
    """Assembles blocks from streamed GenerateContentResponse chunks: text and
    thought deltas join the block before them unless that one is already
    signed; each functionCall arrives whole."""

    def __init__(self) -> None:
        self.content: list[ContentBlock] = []
        self.usage: TokenUsage = {"input_tokens": 0, "output_tokens": 0}
        self.finish: str | None = None
        self.model: str | None = None  # the first chunk's modelVersion

    def feed(self, data: Any) -> list[ProviderEvent]:
        if not isinstance(data, dict):
            raise ProviderError(f"{_NAME}: a stream event is not an object", kind="malformed")
        if isinstance(data.get("error"), dict):
            error = data["error"]
            raise ProviderError(
                f"{_NAME}: {error.get('message', 'stream error')} ({error.get('status', 'error')})"
            )
        if (blocked := _blocked(data)) is not None:
            raise blocked
        if data.get("usageMetadata"):
            self.usage = usage_of(data["usageMetadata"])
        if self.model is None:
            self.model = answered_model(data.get("modelVersion"))
        events: list[ProviderEvent] = []
        for candidate in data.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                block = from_wire_part(part)
                if block is not None:
                    events.extend(self._add(block))
            self.finish = candidate.get("finishReason") or self.finish
        return events

    def _add(self, block: ContentBlock) -> list[ProviderEvent]:
        kind = block["type"]
        if kind == "tool_use":
            self.content.append(block)
            return [{"type": "tool_use", "data": block}]
        last = self.content[-1] if self.content else None
        if last is not None and last["type"] == kind and thought_signature(last) is None:
            last["text"] += block["text"]
            if "providerMetadata" in block:
                last["providerMetadata"] = block["providerMetadata"]
        else:
            self.content.append(block)
        return [{"type": kind, "data": block["text"]}] if block["text"] else []


async def list_models(config: AgentConfig) -> list[ModelInfo]:
    """Gemini's model list (``GET /v1beta/models``, every page), for
    ``models/list``; ids drop the ``models/`` prefix."""
    adapter = GeminiAdapter(config)
    base = f"{adapter._base}/{API_VERSION}/models?pageSize=1000"
    models: list[ModelInfo] = []
    url = base
    for _page in range(_MAX_PAGES):
        data = await request_json(
            url, adapter._headers(), None, provider=_NAME, read_error=read_error, method="GET"
        )
        with malformed_reply(_NAME):
            for entry in data.get("models") or []:
                model: ModelInfo = {"id": str(entry["name"]).removeprefix("models/")}
                if entry.get("displayName"):
                    model["displayName"] = str(entry["displayName"])
                models.append(model)
            token = data.get("nextPageToken")
        if not token:
            break
        url = f"{base}&pageToken={quote(str(token), safe='')}"
    return models
