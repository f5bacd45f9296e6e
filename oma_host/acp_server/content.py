"""ACP content blocks to the core's content blocks, and stored turns back for replay.

A block the core cannot carry (audio, a non-image blob) is refused with the
block's path: nothing is dropped silently. A prompt of plain text blocks
arrives as a :class:`TextPrompt`, with no schema model built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
    UserMessageChunk,
)

from oma_host.acp_server.message_ids import message_id
from oma_host.acp_server.updates import SessionUpdate, tool_result_update, tool_use_update
from oma_host.core.errors import InvalidMessageError
from oma_host.core.messages import ContentBlock, LLMMessage

AcpBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


@dataclass(frozen=True, slots=True)
class TextPrompt:
    """A ``session/prompt`` of text blocks only, each ``{type: "text", text}``
    with nothing else: the texts, in order."""

    texts: list[str]


def _image(data: str, mime_type: str) -> ContentBlock:
    return {"type": "image", "source": {"type": "base64", "media_type": mime_type, "data": data}}


def _inside(uri: str, cwd: str) -> str | None:
    """The path of a ``file://`` URI relative to ``cwd``, if it lies inside it."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = Path(unquote(parsed.path)).resolve()
    root = Path(cwd).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else None


def _link_text(block: ResourceContentBlock, cwd: str) -> str:
    text = f"[resource link: {block.name} <{block.uri}>]"
    relative = _inside(block.uri, cwd)
    if relative is not None:
        text += f" (readable with file_read at path {relative!r})"
    return text


def prompt_blocks(prompt: Sequence[AcpBlock] | TextPrompt, cwd: str) -> list[ContentBlock]:
    """One user turn's content blocks for an ACP prompt; see the module docstring."""
    if isinstance(prompt, TextPrompt):
        return [{"type": "text", "text": text} for text in prompt.texts]
    blocks: list[ContentBlock] = []
    for index, block in enumerate(prompt):
        path = f"prompt[{index}]"
        if isinstance(block, TextContentBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContentBlock):
            blocks.append(_image(block.data, block.mime_type))
        elif isinstance(block, ResourceContentBlock):
            blocks.append({"type": "text", "text": _link_text(block, cwd)})
        elif isinstance(block, EmbeddedResourceContentBlock):
            blocks.append(_embedded(block.resource, f"{path}.resource"))
        else:
            raise InvalidMessageError(
                f"{path}: {block.type} content is not supported (promptCapabilities.audio "
                "is false)",
                path,
            )
    return blocks


def _embedded(resource: TextResourceContents | BlobResourceContents, path: str) -> ContentBlock:
    if isinstance(resource, TextResourceContents):
        return {"type": "text", "text": f"[resource {resource.uri}]\n{resource.text}"}
    mime_type = resource.mime_type or ""
    if mime_type.startswith("image/"):
        return _image(resource.blob, mime_type)
    raise InvalidMessageError(
        f"{path}: an embedded blob of type {mime_type or 'unknown'!r} ({resource.uri}) cannot "
        "be passed on; only image blobs and text resources can",
        path,
    )


def prompt_text(blocks: Sequence[ContentBlock]) -> str | None:
    """The prompt as one string when it holds text blocks only (for the
    string-only backends), else None."""
    if all(block["type"] == "text" for block in blocks):
        return "\n".join(block["text"] for block in blocks)
    return None


# -- replay ----------------------------------------------------------------------


def _chunk(role: str, content: TextContentBlock | ImageContentBlock) -> SessionUpdate:
    if role == "user":
        return UserMessageChunk(session_update="user_message_chunk", content=content)
    return AgentMessageChunk(session_update="agent_message_chunk", content=content)


def _replay_block(role: str, block: ContentBlock, cwd: str) -> SessionUpdate:
    kind = block.get("type")
    if kind == "text":
        return _chunk(role, TextContentBlock(type="text", text=block["text"]))
    if kind == "image" and block["source"].get("type") == "base64":
        source = block["source"]
        return _chunk(
            role,
            ImageContentBlock(type="image", data=source["data"], mime_type=source["media_type"]),
        )
    if kind == "reasoning" and block.get("text"):
        thought = TextContentBlock(type="text", text=block["text"])
        return AgentThoughtChunk(session_update="agent_thought_chunk", content=thought)
    if kind == "tool_use":
        return tool_use_update(block, cwd)
    if kind == "tool_result":
        return tool_result_update(block)
    # A block with no ACP form (a url image, a redacted thought) is named, not lost.
    return _chunk(role, TextContentBlock(type="text", text=f"[{kind}]"))


def replay_updates(
    history: Sequence[LLMMessage], cwd: str, epoch: str
) -> list[tuple[SessionUpdate, str]]:
    """The updates that show a stored conversation as the editor first saw
    it, each with the ``messageId`` of its message (:mod:`.message_ids`)."""
    return [
        (_replay_block(message["role"], block, cwd), message_id(epoch, index))
        for index, message in enumerate(history)
        for block in message["content"]
    ]
