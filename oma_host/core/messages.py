"""LLMMessage and its content blocks, the message contract (docs/protocol.md, "Data types").

Values of these types are plain JSON data; :mod:`.guard` is the one place that
checks caller data against them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,  # pydantic needs it before 3.12
    cast,
)

from pydantic import WithJsonSchema
from typing_extensions import TypedDict


class MediaSourceBase64(TypedDict):
    type: Literal["base64"]
    media_type: str
    data: str


class MediaSourceUrl(TypedDict):
    type: Literal["url"]
    media_type: str
    url: str


MediaSource = MediaSourceBase64 | MediaSourceUrl


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    type: Literal["image"]
    source: MediaSourceBase64


class ToolUseBlock(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class ToolResultTextPart(TypedDict):
    type: Literal["text"]
    text: str


class ToolResultImagePart(TypedDict):
    type: Literal["image"]
    source: MediaSource


class ToolResultFilePart(TypedDict):
    type: Literal["file"]
    filename: str
    source: MediaSource


ToolResultPart = ToolResultTextPart | ToolResultImagePart | ToolResultFilePart


class ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[ToolResultPart]
    is_error: NotRequired[bool]


class ReasoningBlock(TypedDict):
    type: Literal["reasoning"]
    text: str
    signature: NotRequired[str]
    redactedData: NotRequired[str]


def schema_ref(name: str) -> WithJsonSchema:
    """Point ``oma-host schema`` at a definition it writes itself. (A plain
    ``$ref`` here would make pydantic look for it; oma_host/cli/schema.py turns
    this marker into the ``$ref``.)"""
    return WithJsonSchema({"x-oma-ref": name})


ContentBlock = Annotated[dict[str, Any], schema_ref("ContentBlock")]


class LLMMessage(TypedDict):
    role: Literal["user", "assistant"]
    content: list[ContentBlock]


RunInput = str | Sequence[LLMMessage]
PromptInput = str | Sequence[ContentBlock]


def text_message(text: str) -> LLMMessage:
    """The message a string input is shorthand for."""
    return {"role": "user", "content": [{"type": "text", "text": text}]}


# --------------------------------------------------------------------------
# Views used by hooks and bridges


def _latest_user_index(messages: Sequence[LLMMessage]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index]["role"] == "user":
            return index
    return None


def latest_user_prompt(messages: Sequence[LLMMessage]) -> str:
    """The text blocks of the latest user message, concatenated with no
    separator; ``""`` for an image-only turn or when there is no user message."""
    index = _latest_user_index(messages)
    if index is None:
        return ""
    return "".join(
        cast(str, block["text"])
        for block in messages[index]["content"]
        if block.get("type") == "text"
    )


def rewrite_latest_prompt(messages: Sequence[LLMMessage], prompt: str) -> list[LLMMessage]:
    """Replace the latest user message's text blocks by one text block holding
    ``prompt``, standing where the first text block stood (at the front if there
    was none); other blocks keep their relative order. Returns new lists; the
    given messages are not touched. With no user message at all, the prompt
    becomes a new user message at the end (a hook asked for a prompt, and
    dropping it silently is the one thing we never do)."""
    result = list(messages)
    index = _latest_user_index(messages)
    if index is None:
        result.append(text_message(prompt))
        return result
    replacement: ContentBlock = {"type": "text", "text": prompt}
    content: list[ContentBlock] = []
    placed = False
    for block in messages[index]["content"]:
        if block.get("type") == "text":
            if not placed:
                content.append(replacement)
                placed = True
            continue
        content.append(block)
    if not placed:
        content.insert(0, replacement)
    result[index] = {"role": messages[index]["role"], "content": content}
    return result


def shared_prefix(old: list[LLMMessage], new: list[LLMMessage]) -> int:
    """How many messages ``new`` begins with that ``old`` began with too: the
    same objects (a history sent again) or equal ones (the history's copies
    of a turn's messages). Compared in C while the two agree, so a history
    sent again with a turn added costs about its new messages."""
    count = min(len(old), len(new))
    if old[:count] == new[:count]:
        return count
    index = 0
    while index < count and (old[index] is new[index] or old[index] == new[index]):
        index += 1
    return index
