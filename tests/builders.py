"""Builders for the seed's data types (docs/protocol.md, "Data types"), shared
by every test: content blocks and messages exactly as a client writes them,
tool calls as a model makes them, and the simulator's scripted replies."""

from __future__ import annotations

from typing import Any

from oma_host.testing.simulator import Reply

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


# -- What the model sends: tool calls and the simulator's scripted replies ----


def tool_use(call_id: str, name: str, input: Any = None, /, **arguments: Any) -> dict[str, Any]:
    """A ``tool_use`` block: the model calls ``name`` with ``arguments``, or
    with ``input`` as given (any JSON value: a model may send a malformed one)."""
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": arguments if input is None else input,
    }


def reply(*blocks: dict[str, Any] | str, **options: Any) -> Reply:
    """A scripted model reply holding ``blocks`` in order (a string is a text
    block); ``options`` are :class:`Reply`'s (usage, stop_reason, pacing...)."""
    content = [text(block) if isinstance(block, str) else block for block in blocks]
    return Reply(content=content, **options)


# -- A session that changes files three ways, for the rewind tests ------------

# What the user asks in each turn, and the command turn 3 runs (it writes two files).
THREE_TURNS_ASKED = ("write one", "write two", "run it")
THREE_TURNS_COMMAND = "mkdir made && echo c > made/c.txt && echo d > d.txt"


def three_turns_replies() -> list[Reply]:
    """The model's side of the three turns: turn 1 writes one.txt; turn 2
    rewrites notes.txt and writes two.txt; turn 3 runs
    :data:`THREE_TURNS_COMMAND`."""
    return [
        reply(tool_use("w1", "file_write", path="one.txt", content="first turn\n")),
        reply("wrote one.txt"),
        reply(
            tool_use("w2", "file_write", path="notes.txt", content="the agent's notes\n"),
            tool_use("w3", "file_write", path="two.txt", content="second turn\n"),
        ),
        reply("wrote notes.txt and two.txt"),
        reply(tool_use("s1", "shell", command=THREE_TURNS_COMMAND)),
        reply("ran the command"),
    ]
