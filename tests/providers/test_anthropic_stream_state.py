"""The Anthropic stream's blocks are assembled from their deltas: the pieces
kept per field and joined at the block's end make the same blocks (and the
same errors) as adding each delta to the text as it came."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_host.providers.anthropic_reply import StreamState, quick_text_delta
from oma_host.providers.base import MALFORMED


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _finish(state: StreamState) -> None:
    state.feed("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    state.feed("message_stop", {"type": "message_stop"})


@given(
    texts=st.lists(st.text(max_size=4), max_size=30),
    thoughts=st.lists(st.text(max_size=4), max_size=10),
    stop_text=st.booleans(),
)
def test_blocks_are_their_deltas_joined(
    texts: list[str], thoughts: list[str], stop_text: bool
) -> None:
    state = StreamState()
    state.feed("content_block_start", _start(0, {"type": "thinking", "thinking": ""}))
    for piece in thoughts:
        state.feed("content_block_delta", _delta(0, {"type": "thinking_delta", "thinking": piece}))
    for piece in ("sig", "nature"):
        state.feed(
            "content_block_delta", _delta(0, {"type": "signature_delta", "signature": piece})
        )
    state.feed("content_block_stop", {"type": "content_block_stop", "index": 0})
    state.feed("content_block_start", _start(1, {"type": "text", "text": "pre-"}))
    events = []
    for piece in texts:
        events += state.feed(
            "content_block_delta", _delta(1, {"type": "text_delta", "text": piece})
        )
    if stop_text:  # a reply may end without the block's stop event
        state.feed("content_block_stop", {"type": "content_block_stop", "index": 1})
    _finish(state)
    assert [e["data"] for e in events] == texts
    assert state.response().content == [
        {"type": "reasoning", "text": "".join(thoughts), "signature": "signature"},
        {"type": "text", "text": "pre-" + "".join(texts)},
    ]


def test_a_block_started_again_starts_from_its_new_text() -> None:
    state = StreamState()
    state.feed("content_block_start", _start(0, {"type": "text", "text": ""}))
    for piece in ("a", "b", "c"):
        state.feed("content_block_delta", _delta(0, {"type": "text_delta", "text": piece}))
    state.feed("content_block_start", _start(0, {"type": "text", "text": "new "}))
    for piece in ("d", "e"):
        state.feed("content_block_delta", _delta(0, {"type": "text_delta", "text": piece}))
    _finish(state)
    assert state.response().content == [{"type": "text", "text": "new de"}]


@pytest.mark.parametrize("position", [0, 1, 2])
def test_a_delta_that_is_not_text_fails_as_adding_it_did(position: int) -> None:
    state = StreamState()
    state.feed("content_block_start", _start(0, {"type": "text", "text": ""}))
    pieces: list[Any] = ["a", "b", "c"]
    pieces[position] = 7
    with pytest.raises(MALFORMED) as caught:
        for piece in pieces:
            state.feed("content_block_delta", _delta(0, {"type": "text_delta", "text": piece}))
    assert str(caught.value) == 'can only concatenate str (not "int") to str'
    with pytest.raises(KeyError):  # a delta for a block never started
        state.feed("content_block_delta", _delta(5, {"type": "text_delta", "text": "x"}))


# -- the text delta read without json.loads (anthropic_reply.quick_text_delta) ----------------


def _slow(data: str) -> tuple[int, str] | None:
    """What json.loads makes of ``data``, when it is a text delta of the
    canonical shape (those keys, in that order, nothing else)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    if (
        not isinstance(value, dict)
        or list(value) != ["type", "index", "delta"]
        or value["type"] != "content_block_delta"
        or type(value["index"]) is not int
        or not isinstance(value["delta"], dict)
        or list(value["delta"]) != ["type", "text"]
        or value["delta"]["type"] != "text_delta"
        or not isinstance(value["delta"]["text"], str)
    ):
        return None
    return value["index"], value["delta"]["text"]


# Escaped by json.dumps or not, control characters, a lone surrogate.
_PIECE = st.text(
    alphabet=st.sampled_from(
        ["a", "é", "😀", '"', "\\", "\n", "\t", "\0", "\x1f", "/", " ", "\ud800"]
    ),
    max_size=6,
)


@settings(max_examples=400)
@given(
    index=st.integers(min_value=0, max_value=12),
    text=_PIECE,
    compact=st.booleans(),
    ascii_only=st.booleans(),
    edit=st.sampled_from(
        ["", "space", "tail", "after", "lead-zero", "minus", "key", "escape", "raw"]
    ),
)
def test_a_text_delta_is_read_as_json_loads_reads_it(
    index: int, text: str, compact: bool, ascii_only: bool, edit: str
) -> None:
    """Either the same index and text as json.loads, or None (json.loads's
    path then); never None for the shapes Anthropic and json.dumps write."""
    separators = (",", ":") if compact else (", ", ": ")
    value = {"type": "content_block_delta", "index": index}
    value["delta"] = {"type": "text_delta", "text": text}  # type: ignore[assignment]
    data = json.dumps(value, separators=separators, ensure_ascii=ascii_only)
    if edit == "space":
        data = data.replace('"index"', ' "index"')
    elif edit == "tail":
        data += " "
    elif edit == "after":  # not one JSON value: json.loads fails
        data += "}"
    elif edit == "lead-zero":
        data = data.replace(
            f'"index":{separators[1][1:]}{index}', f'"index":{separators[1][1:]}0{index}'
        )
    elif edit == "minus":
        data = data.replace(
            f'"index":{separators[1][1:]}{index}', f'"index":{separators[1][1:]}-{index}'
        )
    elif edit == "key":
        data = data[:-2] + ', "extra": 1}}'
    elif edit == "escape":
        data = data.replace('"text_delta"', '"text\\u005fdelta"')
    elif edit == "raw":  # control characters as they are: json.loads refuses them
        data = data[: data.rindex('"text"')] + '"text": "' + text + '"}}'
    got = quick_text_delta(data)
    assert got is None or got == _slow(data)
    if not edit:
        assert got == (index, text)


@given(texts=st.lists(_PIECE, max_size=12))
def test_the_adapter_reads_text_deltas_as_the_events_path_does(texts: list[str]) -> None:
    """Through quick_text_delta or through json.loads and feed, the same events
    and the same blocks."""
    fast, slow = StreamState(), StreamState()
    for state in (fast, slow):
        state.feed("content_block_start", _start(0, {"type": "text", "text": ""}))
    fast_events, slow_events = [], []
    for piece in texts:
        data = json.dumps(_delta(0, {"type": "text_delta", "text": piece}))
        read = quick_text_delta(data)
        assert read is not None
        fast_events.append(fast.text_delta(*read))
        slow_events += slow.feed("content_block_delta", json.loads(data))
    for state in (fast, slow):
        _finish(state)
    assert fast_events == slow_events
    assert fast.response() == slow.response()
    with pytest.raises(KeyError):  # a delta for a block never started, as feed fails
        fast.text_delta(3, "x")
