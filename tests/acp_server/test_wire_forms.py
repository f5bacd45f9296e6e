"""The door's fast paths held to the schema's models: what
``plain_text_prompt`` accepts ``PromptRequest`` accepts too, with the same
texts; and the updates and answers built as plain dicts are what the models
dump to, so the editor reads the same bytes either way."""

from __future__ import annotations

import json
from typing import Any, get_args

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    Cost,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    TextContentBlock,
    Usage,
    UsageUpdate,
)
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from oma_host.acp_server.routes import plain_text_prompt
from oma_host.acp_server.updates import (
    StopReason,
    event_update,
    prompt_answer,
    usage_update,
    wire_update,
)
from oma_host.core.config import AgentConfig
from oma_host.core.results import AgentRunResult

# Text with what JSON makes hard: quotes, escapes, non-ASCII, lone surrogates.
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
JSON_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT


def _json(value: Any) -> str:
    """The bytes the wire writes (the library's encoder settings)."""
    return json.dumps(value, separators=(",", ":"))


def _near_text_block() -> st.SearchStrategy[Any]:
    """Blocks that are, or nearly are, plain text blocks."""
    keys = st.sampled_from(["type", "text", "_meta", "annotations", "uri", "Text"])
    values = JSON_SCALARS | st.sampled_from(["text", "image"]) | st.just({})
    exact = st.builds(lambda t: {"type": "text", "text": t}, TEXT)
    return exact | st.dictionaries(keys, values, max_size=3) | JSON_SCALARS


def _near_prompt_params() -> st.SearchStrategy[Any]:
    blocks = st.lists(_near_text_block(), max_size=3)
    exact = st.fixed_dictionaries({"sessionId": TEXT, "prompt": blocks})
    keys = st.sampled_from(["sessionId", "session_id", "prompt", "_meta"])
    values = JSON_SCALARS | blocks
    return exact | st.dictionaries(keys, values, max_size=3) | JSON_SCALARS


@given(_near_prompt_params())
def test_the_plain_prompt_shape_takes_only_what_the_schema_takes(params: Any) -> None:
    plain = plain_text_prompt(params)
    if plain is None:
        return
    session_id, prompt = plain
    request = PromptRequest.model_validate(params)  # raises if the shape took too much
    assert session_id == request.session_id
    assert all(isinstance(block, TextContentBlock) for block in request.prompt)
    assert prompt.texts == [block.text for block in request.prompt]  # type: ignore[union-attr]


def test_the_plain_prompt_shape_takes_the_common_prompt() -> None:
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
    plain = plain_text_prompt(params)
    assert plain is not None
    assert plain[0] == "s"
    assert plain[1].texts == ["hi"]


@given(TEXT, st.none() | TEXT)
def test_text_and_thought_chunks_are_the_models_dumps(text: str, message: str | None) -> None:
    """With the ``messageId`` of their message, or none (a chunk outside a turn):
    the same fields, and without an id the same bytes."""
    block = TextContentBlock(type="text", text=text)
    cases = [
        (
            "text",
            AgentMessageChunk(
                session_update="agent_message_chunk", content=block, message_id=message
            ),
        ),
        (
            "reasoning",
            AgentThoughtChunk(
                session_update="agent_thought_chunk", content=block, message_id=message
            ),
        ),
    ]
    for kind, model in cases:
        event: Any = {"type": kind, "data": text}
        update = event_update(event, "/", message=message)
        assert update == wire_update(model)
        if message is None:  # the door writes ``messageId`` last, the model before the tag
            assert _json(update) == _json(wire_update(model))
        # and as the library dumped a whole session/update
        notification = SessionNotification(session_id="s", update=model)
        assert {"sessionId": "s", "update": update} == notification.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude_defaults=True
        )


def test_a_chunk_the_schema_refuses_still_fails_as_the_model_does() -> None:
    try:
        event_update({"type": "text", "data": 5}, "/")  # type: ignore[typeddict-item]
    except ValidationError:
        return
    raise AssertionError("a text chunk of an int was built")


def _result(given_tokens: Any, taken_tokens: Any) -> AgentRunResult:
    usage = {"input_tokens": given_tokens, "output_tokens": taken_tokens}
    return {"tokenUsage": usage}  # type: ignore[typeddict-item]


TOKENS = st.integers(min_value=0, max_value=2**40)


def _config(budget: int | None = None) -> AgentConfig:
    return AgentConfig(name="a", model="a-model-no-table-knows", maxTokenBudget=budget)


@given(
    TOKENS,
    TOKENS,
    st.none() | st.integers(min_value=1, max_value=2**40),
    st.none() | st.floats(min_value=0, max_value=1e6),
)
def test_usage_update_is_the_models_dump(
    given_tokens: int, taken: int, budget: int | None, cost: float | None
) -> None:
    result = _result(given_tokens, taken)
    if cost is not None:
        result["cost"] = {"amount": cost, "currency": "USD"}
    update = usage_update(result, _config(budget), cost or 0.0)
    used = given_tokens + taken
    model = UsageUpdate(
        session_update="usage_update",
        used=used,
        size=max(budget or 200_000, used),
        cost=None if cost is None else Cost(amount=round(cost, 8), currency="USD"),
    )
    assert update == wire_update(model)
    assert _json(update) == _json(wire_update(model))


@given(TOKENS, TOKENS, st.sampled_from(get_args(StopReason)))
def test_the_prompt_answer_is_the_models_dump(given_tokens: int, taken: int, reason: Any) -> None:
    answer = prompt_answer(reason, _result(given_tokens, taken))
    model = PromptResponse(
        stop_reason=reason,
        usage=Usage(
            input_tokens=given_tokens, output_tokens=taken, total_tokens=given_tokens + taken
        ),
    )
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    assert answer == dumped
    assert _json(answer) == _json(dumped)


def test_token_counts_that_are_not_ints_go_through_the_models() -> None:
    answer = prompt_answer("end_turn", _result(3.0, 4.0))
    assert answer["usage"] == {"totalTokens": 7, "inputTokens": 3, "outputTokens": 4}
    assert usage_update(_result(3.0, 4.0), _config(), 0.0) == {
        "used": 7,
        "size": 200_000,
        "sessionUpdate": "usage_update",
    }
