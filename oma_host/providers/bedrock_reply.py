"""Reading the Bedrock Converse API's answers: errors, a reply's blocks and usage, the stream.

Blocks the core keeps nothing of (citations, guard content) are left out.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

import httpx

from oma_host.core.errors import ProviderErrorKind
from oma_host.core.messages import ContentBlock
from oma_host.core.results import TokenUsage
from oma_host.providers.base import LLMResponse, ProviderError, ProviderEvent
from oma_host.providers.http import parse_event_json

if TYPE_CHECKING:
    from oma_host.providers.eventstream import EventMessage

NAME = "bedrock"

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


def from_wire_block(block: dict[str, Any]) -> ContentBlock | None:
    if "text" in block:
        return {"type": "text", "text": str(block["text"])}
    if "toolUse" in block:
        use = block["toolUse"]
        if not isinstance(use.get("input"), dict):
            raise ProviderError(
                f"{NAME}: the input of tool {use.get('name')!r} is not an object",
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


class StreamState:
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
                f"{NAME}: {error_type}: {text}",
                status_code=_EXCEPTION_STATUS.get(name),
                kind="auth" if error_type in _AUTH_ERRORS else "provider",
            )
        if kind == "error":
            code, text = headers.get(":error-code", "error"), headers.get(":error-message", "")
            raise ProviderError(f"{NAME}: {code}: {text}")
        event = str(headers.get(":event-type", ""))
        data = parse_event_json(message.payload.decode(errors="replace") or "{}", NAME)
        if not isinstance(data, dict):
            raise ProviderError(f"{NAME}: a stream event is not an object", kind="malformed")
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
                f"{NAME}: the input of tool {use['name']!r} is not valid JSON", kind="malformed"
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
