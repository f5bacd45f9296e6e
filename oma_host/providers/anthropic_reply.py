"""Reading the Anthropic Messages API's answers: errors, blocks, usage, the stream.

Reply blocks the core has no type for (server tools, citations) are kept as
they came.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from oma_host.core.messages import ContentBlock
from oma_host.core.results import TokenUsage
from oma_host.providers.base import LLMResponse, ProviderError, ProviderEvent, answered_model
from oma_host.providers.http import too_long_reader

NAME = "anthropic"

# json.loads's own string reader: a string's value from after its opening
# quote, and where it ends (strict: no control character).
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
# A text delta's data, as Anthropic (no spaces) and json.dumps (a space after
# each separator) write it, up to its text's opening quote; then, when the
# text holds no escape and no control character (so it is its own JSON
# string's value) and the data ends with the two braces, the text; see
# quick_text_delta.
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


def tool_use_block(block: dict[str, Any]) -> dict[str, Any]:
    """A tool_use block: it has the same fields in both directions (the
    request side sends it back as it came)."""
    return {"type": "tool_use", "id": block["id"], "name": block["name"], "input": block["input"]}


def from_wire_block(block: dict[str, Any]) -> ContentBlock:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return tool_use_block(block)
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


def usage_of(data: dict[str, Any] | None) -> TokenUsage:
    data = data or {}
    usage: TokenUsage = {
        "input_tokens": int(data.get("input_tokens") or 0),
        "output_tokens": int(data.get("output_tokens") or 0),
    }
    for name in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        if data.get(name):  # reported when not zero, as by every adapter
            usage[name] = int(data[name])
    return usage


def quick_text_delta(data: str) -> tuple[int, str] | None:
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


class StreamState:
    """Assembles content blocks from Messages API stream events."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.partial_json: dict[int, list[str]] = {}
        # Text, thinking and signature deltas after each field's first, by (index, field).
        self.parts: dict[tuple[int, str], list[str]] = {}
        self.usage: TokenUsage = {"input_tokens": 0, "output_tokens": 0}
        self.stop_reason = "end_turn"
        self.model: str | None = None  # message_start's
        self.finished = False

    def feed(self, name: str, data: Any) -> list[ProviderEvent]:
        if not isinstance(data, dict):
            raise ProviderError(f"{NAME}: a stream event is not an object", kind="malformed")
        kind = data.get("type", name)
        if kind == "message_start":
            message = data.get("message", {})
            self.usage = usage_of(message.get("usage"))
            self.model = answered_model(message.get("model"))
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
            self.usage = usage_of({**self.usage, **counts})
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            error = data.get("error", {})
            # An error inside a 200 stream (an overload, most often) carries
            # the status its type has as an answer, as the failed request would.
            status = _STREAM_ERROR_STATUS.get(error.get("type"))
            raise ProviderError(
                f"{NAME}: {error.get('message', 'stream error')} ({error.get('type', 'error')})",
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
                    f"{NAME}: tool_use {block.get('name')!r} input is not valid JSON",
                    kind="malformed",
                ) from None
            return [{"type": "tool_use", "data": from_wire_block(block)}]
        return []

    def response(self) -> LLMResponse:
        content = [from_wire_block(self._settled(i)) for i in sorted(self.blocks)]
        return LLMResponse(
            content=content, usage=self.usage, stop_reason=self.stop_reason, model=self.model
        )
