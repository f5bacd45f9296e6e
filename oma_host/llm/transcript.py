"""The older turns of a conversation as a transcript for the model that summarises them.

A summary request sends no tools, so tool calls and results go as text, long
results cut in the middle, reasoning left out. Images go beside the line naming
them, and every image and file taken out is listed, so none is lost without a
word.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from oma_host.core.events import CompactedMedia, DroppedTurn
from oma_host.core.messages import ContentBlock, LLMMessage

# The longest text of one block, and of one tool call's input, in a transcript.
BLOCK_CHARS = 8_000
INPUT_CHARS = 2_000
# The prompt's start kept to name a dropped turn.
TURN_PREVIEW_CHARS = 80


def is_turn_start(message: LLMMessage) -> bool:
    """A user message that starts a turn: the caller's, not tool results."""
    return message["role"] == "user" and not any(
        block.get("type") == "tool_result" for block in message["content"]
    )


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its head and tail, the cut marked."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half:,} characters left out ...]\n{text[-half:]}"


@dataclass
class Transcript:
    """The transcript of some messages: ``pieces`` holds each message's
    blocks (text, and base64 images), ``media`` every image and file met."""

    pieces: list[list[ContentBlock]] = field(default_factory=list)
    media: list[CompactedMedia] = field(default_factory=list)


def _media(
    kind: str, source: Any, message: int, block: int, part: int | None, filename: Any = None
) -> CompactedMedia:
    source = source if isinstance(source, dict) else {}
    entry: CompactedMedia = {
        "kind": "file" if kind == "file" else "image",
        "message": message,
        "block": block,
        "mediaType": str(source.get("media_type", "")),
    }
    if part is not None:
        entry["part"] = part
    if source.get("type") == "url":
        entry["url"] = str(source.get("url", ""))
    if kind == "file":
        entry["filename"] = str(filename or "")
    return entry


def media_name(entry: CompactedMedia) -> str:
    """How a summary names an image or a file it took out."""
    what = entry["mediaType"] or "of unknown type"
    if entry["kind"] == "file":
        what = f"file {entry.get('filename') or '(unnamed)'} ({what})"
    else:
        what = f"image {what}"
    where = f"messages[{entry['message']}].content[{entry['block']}]"
    if "part" in entry:
        where += f".content[{entry['part']}]"
    if "url" in entry:
        what += f" at {entry['url']}"
    return f"{what} in {where}"


class _Writer:
    """Builds one message's piece: consecutive text joined in one block."""

    def __init__(self) -> None:
        self.blocks: list[ContentBlock] = []
        self._lines: list[str] = []

    def line(self, text: str) -> None:
        self._lines.append(text)

    def media(self, entry: CompactedMedia, source: Any) -> None:
        self.line(f"[{media_name(entry)}]")
        if entry["kind"] == "image" and isinstance(source, dict) and source.get("type") == "base64":
            self._flush()
            self.blocks.append({"type": "image", "source": dict(source)})

    def _flush(self) -> None:
        if self._lines:
            self.blocks.append({"type": "text", "text": "\n".join(self._lines)})
            self._lines = []

    def done(self) -> list[ContentBlock]:
        self._flush()
        return self.blocks


def _result_text(
    block: ContentBlock, index: int, where: int, out: _Writer, seen: Transcript
) -> None:
    call = block.get("tool_use_id", "")
    marked = " (an error)" if block.get("is_error") else ""
    content = block.get("content")
    if not isinstance(content, list):
        out.line(f"Tool result of {call}{marked}: {cut(str(content), BLOCK_CHARS)}")
        return
    out.line(f"Tool result of {call}{marked}:")
    for number, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            out.line(cut(str(part.get("text", "")), BLOCK_CHARS))
        elif kind in ("image", "file"):
            entry = _media(kind, part.get("source"), where, index, number, part.get("filename"))
            seen.media.append(entry)
            out.media(entry, part.get("source"))
        else:
            out.line(f"[a {kind} part]")


def transcript(messages: list[LLMMessage], first_index: int = 0) -> Transcript:
    """The transcript of ``messages``, numbered from ``first_index`` (their
    place in the conversation, which the media entries give)."""
    seen = Transcript()
    for offset, message in enumerate(messages):
        where = first_index + offset
        out = _Writer()
        speaker = "User" if message["role"] == "user" else "Assistant"
        for index, block in enumerate(message["content"]):
            kind = block.get("type")
            if kind == "text":
                out.line(f"{speaker}: {cut(str(block.get('text', '')), BLOCK_CHARS)}")
            elif kind == "image":
                entry = _media("image", block.get("source"), where, index, None)
                seen.media.append(entry)
                out.media(entry, block.get("source"))
            elif kind == "tool_use":
                given = json.dumps(block.get("input"), ensure_ascii=False)
                name, call = block.get("name"), block.get("id")
                out.line(f"Assistant called {name} ({call}) with {cut(given, INPUT_CHARS)}")
            elif kind == "tool_result":
                _result_text(block, index, where, out, seen)
            elif kind != "reasoning":  # the model's own thinking is not summarised
                out.line(f"[a {kind} block]")
        seen.pieces.append(out.done())
    return seen


def dropped_turns(messages: list[LLMMessage]) -> list[DroppedTurn]:
    """The turns ``messages`` (a conversation's start) holds, each named by
    where it began and its prompt's start."""
    turns: list[DroppedTurn] = []
    for index, message in enumerate(messages):
        if is_turn_start(message):
            said = " ".join(
                str(block.get("text", ""))
                for block in message["content"]
                if block.get("type") == "text"
            )
            text = " ".join(said.split())
            if len(text) > TURN_PREVIEW_CHARS:
                text = text[: TURN_PREVIEW_CHARS - 1] + "…"
            turns.append({"message": index, "text": text})
    return turns
