"""The ACP bridge's shape test for plain text chunks (``plain_text_chunk``)
stands in for the schema's validation: whatever it accepts, the schema accepts
and reads the same text from; the shape agents send is always accepted."""

from __future__ import annotations

from typing import Any

import pytest
from acp.schema import AgentMessageChunk, AgentThoughtChunk, SessionNotification, TextContentBlock
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from oma_host.bridges.acp.client import BridgeClient
from oma_host.bridges.acp.mapping import plain_text_chunk

KINDS: dict[str, type[Any]] = {
    "agent_message_chunk": AgentMessageChunk,
    "agent_thought_chunk": AgentThoughtChunk,
}

# JSON-ish values, including the wrong types for every field.
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """The field's usual value, or anything else."""
    return st.one_of(strategy, values)


extra_keys = st.dictionaries(
    st.sampled_from(["_meta", "messageId", "annotations", "other"]), values, max_size=2
)
contents = st.builds(
    lambda kind, text, extra: {"type": kind, "text": text, **extra},
    maybe(st.sampled_from(["text", "image"])),
    maybe(st.text()),
    extra_keys,
)
updates = st.builds(
    lambda kind, content, extra: {"sessionUpdate": kind, "content": content, **extra},
    maybe(st.sampled_from([*KINDS, "plan", "usage_update"])),
    maybe(contents),
    extra_keys,
)
params = st.builds(
    lambda session, update, extra: {"sessionId": session, "update": update, **extra},
    maybe(st.text(max_size=8)),
    maybe(updates),
    st.dictionaries(st.sampled_from(["_meta", "other"]), values, max_size=1),
)


@given(params)
def test_what_the_shape_test_accepts_the_schema_reads_alike(candidate: Any) -> None:
    chunk = plain_text_chunk(candidate)
    if chunk is None:
        return
    kind, text = chunk
    update = SessionNotification.model_validate(candidate).update
    assert isinstance(update, KINDS[kind])
    assert isinstance(update.content, TextContentBlock) and update.content.text == text


@given(st.sampled_from(list(KINDS)), st.text(), st.text(max_size=12))
def test_the_shape_agents_send_is_accepted(kind: str, text: str, session: str) -> None:
    candidate = {
        "sessionId": session,
        "update": {"sessionUpdate": kind, "content": {"type": "text", "text": text}},
    }
    assert plain_text_chunk(candidate) == (kind, text)


def test_anything_else_is_left_to_the_schema() -> None:
    plain: dict[str, Any] = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "x"},
        },
    }
    assert plain_text_chunk(plain) is not None
    with_meta = {**plain, "_meta": {"a": 1}}
    with_id = {**plain, "update": {**plain["update"], "messageId": "m"}}
    not_text = {
        **plain,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 1}},
    }
    others: list[Any] = [with_meta, with_id, not_text, None, [], "x"]
    for candidate in others:
        assert plain_text_chunk(candidate) is None
    with pytest.raises(ValidationError):  # the schema refuses a number for text, too
        SessionNotification.model_validate(not_text)


@given(st.one_of(params, values))
def test_no_update_an_agent_sends_breaks_the_client(candidate: Any) -> None:
    """Whatever the params, the update is applied, held or dropped: nothing raises."""
    client = BridgeClient("agent", "reject", None, 1.0)
    client.take_update(candidate)
