"""The Amazon Bedrock adapter: the Converse and ConverseStream APIs, requests signed.

Requests are signed with SigV4 (:mod:`.sigv4`) or carry a Bedrock API key; the
stream's binary framing is decoded as the bytes arrive (:mod:`.eventstream`)
and answers read by :mod:`.bedrock_reply`. docs/providers.md, "How blocks map".
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from oma_host.core.messages import ContentBlock, LLMMessage
from oma_host.core.provider_facts import facts_of
from oma_host.providers.base import (
    ChatOptions,
    LLMResponse,
    ProviderError,
    ProviderEvent,
    checked_messages,
    configured_base_url,
    malformed_reply,
    required_key,
    resolve_api_key,
)
from oma_host.providers.bedrock_reply import (
    NAME,
    StreamState,
    from_wire_block,
    read_error,
    usage_of,
)
from oma_host.providers.http import open_response, request_json
from oma_host.providers.http_client import json_body
from oma_host.providers.wire_prefix import WirePrefix

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

SERVICE = "bedrock"  # the signing name of bedrock-runtime
_FACTS = facts_of(NAME)
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


def default_base_url(region: str) -> str:
    return (_FACTS.default_base_url or "").format(region=region)


def _unsupported(where: str, what: str) -> ProviderError:
    return ProviderError(
        f"{NAME}: {where}: {what} cannot be sent to the Bedrock Converse API",
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
            f"{NAME}: thinking.budgetTokens is mapped for Claude models only; "
            f"give {model} a thinking.effort",
            kind="provider",
        )
    return {"reasoning_effort": thinking.effort}, max_tokens


class BedrockAdapter:
    """See the module docstring."""

    name = NAME

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
        configured = configured_base_url(self._config, _FACTS)
        try:
            region = sigv4.resolve_region() if bearer is None or not configured else ""
            credentials = None if bearer is not None else sigv4.resolve_credentials()
        except sigv4.CredentialsError as error:
            raise ProviderError(f"{NAME}: {error}", kind="auth") from None
        base = (configured or default_base_url(region)).rstrip("/")
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
        reply = await request_json(url, headers, data, provider=NAME, read_error=read_error)
        if not isinstance(reply, dict):
            raise ProviderError(f"{NAME}: the response is not an object", kind="malformed")
        with malformed_reply(NAME):
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
        state = StreamState()
        async with open_response(
            url, headers, data, provider=NAME, read_error=read_error
        ) as response:
            async for chunk in response.aiter_bytes():
                try:
                    frames = decoder.feed(chunk)
                except EventStreamError as error:
                    raise ProviderError(
                        f"{NAME}: the event stream is malformed: {error}", kind="malformed"
                    ) from None
                for frame in frames:
                    with malformed_reply(NAME):
                        events = state.feed(frame)
                    for event in events:
                        yield event
            try:
                decoder.finish()
            except EventStreamError as error:
                raise ProviderError(f"{NAME}: {error} (cut mid-way)", kind="stream") from None
        if state.stop_reason is None:
            raise ProviderError(
                f"{NAME}: the stream ended before messageStop (cut mid-way)", kind="stream"
            )
        with malformed_reply(NAME):
            final = state.response()
        yield {"type": "done", "data": final}
