"""The Amazon Bedrock adapter: the Converse API (``POST
{baseURL}/model/{modelId}/converse``) and ConverseStream
(``.../converse-stream``, answered in the binary event-stream framing of
:mod:`oma_host.providers.eventstream`, decoded as the bytes arrive).

The base URL defaults to ``https://bedrock-runtime.{region}.amazonaws.com``.
Requests are signed with SigV4 (:mod:`oma_host.providers.sigv4`: the AWS
environment variables, else the shared files' ``AWS_PROFILE``), or carry a
Bedrock API key as a bearer token when one is given (``apiKey``,
``apiKeyEnv``, ``AWS_BEARER_TOKEN_BEDROCK``).

Mapping: text; images as ``image: {format, source: {bytes}}``; tool_use as
``toolUse`` and tool_result as ``toolResult`` (text, image and document
parts, ``status: "error"``); reasoning as ``reasoningContent`` with its
signature (or its ``redactedContent``), echoed back unchanged. ``thinking``
goes in ``additionalModelRequestFields`` (Anthropic's form for Claude
models, ``reasoning_effort`` for the others); ``promptCaching: true`` adds a
``cachePoint`` after the system prompt, the tools and the conversation.
Errors name their type (``x-amzn-errortype`` or ``__type``).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from oma_host.core.errors import ProviderErrorKind
from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.provider_facts import facts_of
from oma_host.core.results import TokenUsage
from oma_host.providers.base import (
    ChatOptions,
    LLMResponse,
    ProviderError,
    ProviderEvent,
    checked_messages,
    malformed_reply,
    required_key,
    resolve_api_key,
)
from oma_host.providers.http import open_response, parse_event_json, request_json
from oma_host.providers.http_client import json_body
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig
    from oma_host.providers.eventstream import EventMessage

_NAME = "bedrock"
SERVICE = "bedrock"  # the signing name of bedrock-runtime
_FACTS = facts_of(_NAME)
CACHE_POINT = {"cachePoint": {"type": "default"}}
_IMAGE_FORMATS = {"png", "jpeg", "gif", "webp"}
_DOCUMENT_FORMATS = {"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}
_DOCUMENT_TYPES = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
    "application/msword": "doc",
    "application/vnd.ms-excel": "xls",
}
# Errors that mean the credentials were refused.
_AUTH_ERRORS = {
    "AccessDeniedException",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "IncompleteSignatureException",
    "MissingAuthenticationTokenException",
    "ExpiredTokenException",
    "SignatureDoesNotMatch",
}
# A stream exception's HTTP status, as the non-streaming call would answer it.
_EXCEPTION_STATUS = {
    "throttlingException": 429,
    "serviceUnavailableException": 503,
    "internalServerException": 500,
    "modelStreamErrorException": 424,
    "validationException": 400,
    "modelTimeoutException": 408,
}


def default_base_url(region: str) -> str:
    return (_FACTS.default_base_url or "").format(region=region)


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{_NAME}: {where}: {what} cannot be sent to the Bedrock Converse API",
        kind="unsupported_block",
    )


def _base64_source(source: dict[str, Any], where: str, what: str) -> str:
    if source.get("type") != "base64":
        raise _unsupported(where, f"{what} by URL (Converse takes bytes or an S3 location)")
    return str(source["data"])


def _image(source: dict[str, Any], where: str) -> dict[str, Any]:
    data = _base64_source(source, where, "an image")
    image_format = str(source["media_type"]).removeprefix("image/").replace("jpg", "jpeg")
    if image_format not in _IMAGE_FORMATS:
        raise _unsupported(where, f"an image of type {source['media_type']!r}")
    return {"image": {"format": image_format, "source": {"bytes": data}}}


def _document(part: dict[str, Any], where: str) -> dict[str, Any]:
    source = part["source"]
    data = _base64_source(source, where, "a file")
    filename = str(part["filename"])
    document_format = _DOCUMENT_TYPES.get(source["media_type"]) or filename.rsplit(".", 1)[-1]
    if document_format not in _DOCUMENT_FORMATS:
        raise _unsupported(where, f"a file of type {source['media_type']!r} ({filename})")
    # Converse allows letters, digits, spaces, hyphens, parentheses and brackets.
    name = re.sub(r"\s+", " ", re.sub(r"[^A-Za-z0-9\s\-()\[\]]", "-", filename)).strip() or "file"
    return {"document": {"format": document_format, "name": name, "source": {"bytes": data}}}


def _tool_result(block: ContentBlock, where: str) -> dict[str, Any]:
    content = block["content"]
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"text": content})
    else:
        for index, part in enumerate(content):
            at = f"{where}.content[{index}]"
            if part["type"] == "text":
                parts.append({"text": part["text"]})
            elif part["type"] == "image":
                parts.append(_image(part["source"], at))
            else:
                parts.append(_document(part, at))
    result: dict[str, Any] = {"toolUseId": block["tool_use_id"], "content": parts}
    if block.get("is_error"):
        result["status"] = "error"
    return {"toolResult": result}


def to_wire_block(block: ContentBlock, where: str) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"text": block["text"]}
    if kind == "image":
        return _image(block["source"], where)
    if kind == "tool_use":
        return {
            "toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}
        }
    if kind == "tool_result":
        return _tool_result(block, where)
    if kind == "reasoning":
        if "redactedData" in block:
            return {"reasoningContent": {"redactedContent": block["redactedData"]}}
        text: dict[str, Any] = {"text": block["text"]}
        if "signature" in block:
            text["signature"] = block["signature"]
        return {"reasoningContent": {"reasoningText": text}}
    raise _unsupported(where, f"a block of type {kind!r}")


def wire_message(message: LLMMessage, m: int) -> list[dict[str, Any]]:
    """``messages[m]`` on the wire (one message)."""
    content = [
        to_wire_block(block, f"messages[{m}].content[{b}]")
        for b, block in enumerate(message["content"])
    ]
    return [{"role": message["role"], "content": content}]


def to_wire_messages(messages: list[LLMMessage]) -> list[dict[str, Any]]:
    return [wire for m, message in enumerate(messages) for wire in wire_message(message, m)]


def from_wire_block(block: dict[str, Any]) -> ContentBlock | None:
    if "text" in block:
        return {"type": "text", "text": str(block["text"])}
    if "toolUse" in block:
        use = block["toolUse"]
        if not isinstance(use.get("input"), dict):
            raise ProviderError(
                f"{_NAME}: the input of tool {use.get('name')!r} is not an object",
                kind="malformed",
            )
        return {
            "type": "tool_use",
            "id": str(use["toolUseId"]),
            "name": str(use["name"]),
            "input": use["input"],
        }
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        if "redactedContent" in reasoning:
            return {"type": "reasoning", "text": "", "redactedData": reasoning["redactedContent"]}
        text = reasoning.get("reasoningText") or {}
        result: ContentBlock = {"type": "reasoning", "text": str(text.get("text", ""))}
        if text.get("signature"):
            result["signature"] = str(text["signature"])
        return result
    return None  # citations, guard content...: nothing the library keeps


def usage_of(data: dict[str, Any] | None) -> TokenUsage:
    data = data or {}
    usage: TokenUsage = {
        "input_tokens": int(data.get("inputTokens") or 0),
        "output_tokens": int(data.get("outputTokens") or 0),
    }
    if data.get("cacheWriteInputTokens"):
        usage["cache_creation_input_tokens"] = int(data["cacheWriteInputTokens"])
    if data.get("cacheReadInputTokens"):
        usage["cache_read_input_tokens"] = int(data["cacheReadInputTokens"])
    return usage


def _error_type(response: httpx.Response, body: Any) -> str:
    """``x-amzn-errortype: ThrottlingException:http://...``, else the body's
    ``__type`` (``com.amazon...#ThrottlingException``)."""
    raw = response.headers.get("x-amzn-errortype") or ""
    if not raw and isinstance(body, dict):
        raw = str(body.get("__type") or "")
    return raw.split(":", 1)[0].rsplit("#", 1)[-1]


def read_error(response: httpx.Response, data: bytes) -> tuple[str, ProviderErrorKind]:
    try:
        body: Any = json.loads(data)
    except ValueError:
        body = None
    message = ""
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("Message") or "")
    if not message:
        message = data.decode(errors="replace").strip()[:2000] or "(empty body)"
    error_type = _error_type(response, body)
    kind: ProviderErrorKind = (
        "auth" if error_type in _AUTH_ERRORS or response.status_code == 401 else "provider"
    )
    # Over the model's window: "Input is too long for requested model.", or
    # for Claude "prompt is too long: N tokens > M maximum".
    if error_type == "ValidationException" and "too long" in message.lower():
        kind = "context_too_long"
    return (f"{error_type}: {message}" if error_type else message), kind


def _is_claude(model: str) -> bool:
    return "claude" in model or "anthropic." in model


def thinking_request_fields(
    config: AgentConfig, model: str, max_tokens: int | None
) -> tuple[dict[str, Any], int | None]:
    """``additionalModelRequestFields`` for ``thinking`` and the maxTokens to send."""
    thinking = config.thinking
    if thinking is None:
        return {}, max_tokens
    if _is_claude(model):
        from oma_host.providers.anthropic import thinking_fields

        fields, limit = thinking_fields(thinking, model, max_tokens)
        return fields, limit
    if thinking.effort is None:
        raise ProviderError(
            f"{_NAME}: thinking.budgetTokens is mapped for Claude models only; "
            f"give {model} a thinking.effort",
            kind="provider",
        )
    return {"reasoning_effort": thinking.effort}, max_tokens


class BedrockAdapter:
    """See the module docstring."""

    name = _NAME

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._wire = WirePrefix()

    def _bearer(self) -> str | None:
        """A Bedrock API key, if there is one (else requests are signed); an
        ``apiKeyEnv`` that is not set fails rather than falling back."""
        if self._config.api_key_env:
            return required_key(self._config, _FACTS)
        return resolve_api_key(self._config, _FACTS.key_variables)

    def _request(
        self, model: str, body: dict[str, Any], stream: bool
    ) -> tuple[str, dict[str, str], bytes]:
        """The URL, the headers (signed unless a bearer key is given) and the body bytes."""
        from oma_host.providers import sigv4

        bearer = self._bearer()
        try:
            region = sigv4.resolve_region() if bearer is None or not self._config.base_url else ""
            credentials = None if bearer is not None else sigv4.resolve_credentials()
        except sigv4.CredentialsError as error:
            raise ProviderError(f"{_NAME}: {error}", kind="auth") from None
        base = (self._config.base_url or default_base_url(region)).rstrip("/")
        action = "converse-stream" if stream else "converse"
        # ":" stays as it is: aiohttp would decode a %3A before sending, and the
        # signature must cover the path the server receives (an ARN's "/" is %2F).
        url = f"{base}/model/{quote(model, safe=':')}/{action}"
        data = json_body(body)
        headers = {"content-type": "application/json"}
        if stream:
            headers["accept"] = "application/vnd.amazon.eventstream"
        if credentials is None:
            headers["authorization"] = f"Bearer {bearer}"
            return url, headers, data
        signed = sigv4.sign_request(
            credentials, "POST", url, headers, data, region=region, service=SERVICE
        )
        return url, signed, data

    def _body(self, messages: list[LLMMessage], options: ChatOptions) -> dict[str, Any]:
        caching = self._config.prompt_caching is True
        checked = checked_messages(messages, options)
        body: dict[str, Any] = {"messages": self._wire.render(checked, wire_message)}
        fields, max_tokens = thinking_request_fields(
            self._config, options.model, options.max_tokens
        )
        if options.system_prompt:
            body["system"] = [{"text": options.system_prompt}] + ([CACHE_POINT] if caching else [])
        inference: dict[str, Any] = {}
        if max_tokens is not None:
            inference["maxTokens"] = max_tokens
        inference.update(options.sampling("topP"))
        if inference:
            body["inferenceConfig"] = inference
        if options.tools:
            tools: list[dict[str, Any]] = [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description,
                        "inputSchema": {"json": t.input_schema},
                    }
                }
                for t in options.tools
            ]
            body["toolConfig"] = {"tools": tools + ([CACHE_POINT] if caching else [])}
        if fields:
            body["additionalModelRequestFields"] = fields
        if caching and body["messages"]:
            # A marked copy: the adapter's WirePrefix keeps the message unmarked.
            last = body["messages"][-1]
            body["messages"][-1] = {**last, "content": [*last["content"], CACHE_POINT]}
        return body

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        url, headers, data = self._request(options.model, self._body(messages, options), False)
        reply = await request_json(url, headers, data, provider=_NAME, read_error=read_error)
        if not isinstance(reply, dict):
            raise ProviderError(f"{_NAME}: the response is not an object", kind="malformed")
        with malformed_reply(_NAME):
            blocks = reply["output"]["message"]["content"]
            content = [block for item in blocks if (block := from_wire_block(item)) is not None]
            return LLMResponse(
                content=content,
                usage=usage_of(reply.get("usage")),
                stop_reason=str(reply.get("stopReason") or "end_turn"),
            )

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        from oma_host.providers.eventstream import EventStreamDecoder, EventStreamError

        url, headers, data = self._request(options.model, self._body(messages, options), True)
        decoder = EventStreamDecoder()
        state = _StreamState()
        async with open_response(
            url, headers, data, provider=_NAME, read_error=read_error
        ) as response:
            async for chunk in response.aiter_bytes():
                try:
                    frames = decoder.feed(chunk)
                except EventStreamError as error:
                    raise ProviderError(
                        f"{_NAME}: the event stream is malformed: {error}", kind="malformed"
                    ) from None
                for frame in frames:
                    with malformed_reply(_NAME):
                        events = state.feed(frame)
                    for event in events:
                        yield event
            try:
                decoder.finish()
            except EventStreamError as error:
                raise ProviderError(f"{_NAME}: {error} (cut mid-way)", kind="stream") from None
        if state.stop_reason is None:
            raise ProviderError(
                f"{_NAME}: the stream ended before messageStop (cut mid-way)", kind="stream"
            )
        with malformed_reply(_NAME):
            final = state.response()
        yield {"type": "done", "data": final}


class _StreamState:
    """Assembles blocks from ConverseStream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.tool_input: dict[int, list[str]] = {}
        self.usage: TokenUsage = {"input_tokens": 0, "output_tokens": 0}
        self.stop_reason: str | None = None

    def feed(self, message: EventMessage) -> list[ProviderEvent]:
        headers = message.headers
        kind = headers.get(":message-type", "event")
        if kind == "exception":
            name = str(headers.get(":exception-type", "exception"))
            text = message.payload.decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                text = str(json.loads(text).get("message") or text)
            error_type = name[:1].upper() + name[1:]
            raise ProviderError(
                f"{_NAME}: {error_type}: {text}",
                status_code=_EXCEPTION_STATUS.get(name),
                kind="auth" if error_type in _AUTH_ERRORS else "provider",
            )
        if kind == "error":
            code, text = headers.get(":error-code", "error"), headers.get(":error-message", "")
            raise ProviderError(f"{_NAME}: {code}: {text}")
        event = str(headers.get(":event-type", ""))
        data = parse_event_json(message.payload.decode(errors="replace") or "{}", _NAME)
        if not isinstance(data, dict):
            raise ProviderError(f"{_NAME}: a stream event is not an object", kind="malformed")
        if event == "contentBlockStart":
            start = data.get("start") or {}
            if "toolUse" in start:
                use = start["toolUse"]
                self.blocks[data["contentBlockIndex"]] = {
                    "toolUse": {"toolUseId": use["toolUseId"], "name": use["name"], "input": {}}
                }
                self.tool_input[data["contentBlockIndex"]] = []
        elif event == "contentBlockDelta":
            return self._delta(int(data["contentBlockIndex"]), data["delta"])
        elif event == "contentBlockStop":
            index = int(data["contentBlockIndex"])
            if index in self.tool_input:
                return self._tool_done(index)
        elif event == "messageStop":
            self.stop_reason = str(data.get("stopReason") or "end_turn")
        elif event == "metadata":
            self.usage = usage_of(data.get("usage"))
        return []

    def _delta(self, index: int, delta: dict[str, Any]) -> list[ProviderEvent]:
        if "text" in delta:
            block = self.blocks.setdefault(index, {"text": ""})
            block["text"] += delta["text"]
            return [{"type": "text", "data": delta["text"]}] if delta["text"] else []
        if "toolUse" in delta:
            self.tool_input.setdefault(index, []).append(delta["toolUse"].get("input") or "")
            return []
        if "reasoningContent" in delta:
            piece = delta["reasoningContent"]
            reasoning = self.blocks.setdefault(index, {"reasoningContent": {}})["reasoningContent"]
            if "redactedContent" in piece:
                reasoning["redactedContent"] = piece["redactedContent"]
                return []
            text = reasoning.setdefault("reasoningText", {"text": ""})
            if "signature" in piece:
                text["signature"] = text.get("signature", "") + piece["signature"]
            if piece.get("text"):
                text["text"] += piece["text"]
                return [{"type": "reasoning", "data": piece["text"]}]
        return []

    def _tool_done(self, index: int) -> list[ProviderEvent]:
        raw = "".join(self.tool_input.pop(index))
        use = self.blocks[index]["toolUse"]
        try:
            use["input"] = json.loads(raw) if raw else {}
        except ValueError:
            raise ProviderError(
                f"{_NAME}: the input of tool {use['name']!r} is not valid JSON", kind="malformed"
            ) from None
        block = from_wire_block(self.blocks[index])
        return [{"type": "tool_use", "data": block}] if block is not None else []

    def response(self) -> LLMResponse:
        content = [
            block
            for index in sorted(self.blocks)
            if (block := from_wire_block(self.blocks[index])) is not None
        ]
        return LLMResponse(
            content=content, usage=self.usage, stop_reason=self.stop_reason or "end_turn"
        )
