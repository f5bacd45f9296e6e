"""The Anthropic stream's blocks are assembled from their deltas: the pieces
kept per field and joined at the block's end make the same blocks (and the
same errors) as adding each delta to the text as it came."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_host.providers.anthropic import _StreamState
from oma_host.providers.base import MALFORMED


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _finish(state: _StreamState) -> None:
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
    state = _StreamState()
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
    state = _StreamState()
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
    state = _StreamState()
    state.feed("content_block_start", _start(0, {"type": "text", "text": ""}))
    pieces: list[Any] = ["a", "b", "c"]
    pieces[position] = 7
    with pytest.raises(MALFORMED) as caught:
        for piece in pieces:
            state.feed("content_block_delta", _delta(0, {"type": "text_delta", "text": piece}))
    assert str(caught.value) == 'can only concatenate str (not "int") to str'
    with pytest.raises(KeyError):  # a delta for a block never started
        state.feed("content_block_delta", _delta(5, {"type": "text_delta", "text": "x"}))
