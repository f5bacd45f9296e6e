"""Builders for the seed's data types (docs/protocol.md, "Data types"), shared
by every test: content blocks and messages exactly as a client writes them."""

from __future__ import annotations

from typing import Any

# A tiny valid base64 payload; what it decodes to does not matter to the host.
DATA = "aGVsbG8="


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image(data: str = DATA, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def tool_result(content: Any, tool_use_id: str = "tu_1", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, **extra}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text_message(value: str, role: str = "user") -> dict[str, Any]:
    """One message holding one text block: what a string input is shorthand for."""
    return {"role": role, "content": [text(value)]}
