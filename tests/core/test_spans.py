"""core/spans.py: nothing is built when nobody records, spans nest through
asyncio tasks, a block's end sets its status, and content goes into
attributes only when the recording captures it, redacted and bounded."""

from __future__ import annotations

import asyncio

import pytest

from oma_host.core.bounded_text import PAYLOAD_LIMIT, TRUNCATED
from oma_host.core.redact import Redactor
from oma_host.core.spans import (
    ERROR_TYPE,
    INPUT_MESSAGES,
    OPERATION,
    OUTPUT_MESSAGES,
    TOOL_CALL_ARGUMENTS,
    CollectedSpans,
    Span,
    current_span,
    open_span,
    recording,
    set_span_attributes,
    set_span_content,
    usage_attributes,
)


def test_nobody_recording_gets_no_span() -> None:
    with open_span("chat", "chat m") as span:
        assert span is None and current_span() is None
        set_span_attributes({"a": 1})  # nothing to set it on, and no error


async def test_spans_nest_through_tasks_and_end_children_first() -> None:
    spans = CollectedSpans()

    async def tool(name: str) -> None:
        with open_span("execute_tool", f"execute_tool {name}"):
            await asyncio.sleep(0)

    with recording(spans):
        with open_span("invoke_agent", "invoke_agent a", run_id="run_1") as root:
            assert root is not None and current_span() is root
            # Tasks made inside the span copy the context: their spans are its children.
            await asyncio.gather(asyncio.ensure_future(tool("x")), asyncio.ensure_future(tool("y")))
            set_span_attributes({"oma.turns": 1})
        with open_span("invoke_agent", "invoke_agent b") as other:
            assert other is not None
    assert current_span() is None
    x, y, first, second = spans.spans
    assert (first.name, second.name) == ("invoke_agent a", "invoke_agent b")
    assert first.parent_id is None and second.parent_id is None
    assert first.trace_id != second.trace_id  # each root is a trace of its own
    for child in (x, y):
        assert (child.parent_id, child.trace_id, child.run_id) == (
            first.span_id,
            first.trace_id,
            "run_1",
        )
    assert len(first.trace_id) == 32 and len(first.span_id) == 16
    assert int(first.trace_id, 16) and int(first.span_id, 16)
    assert first.attributes == {OPERATION: "invoke_agent", "oma.turns": 1}
    assert first.end_ns is not None and first.start_ns <= x.start_ns <= x.end_ns <= first.end_ns  # type: ignore[operator]
    assert spans.trace_id == first.trace_id


async def test_a_block_s_end_sets_its_status() -> None:
    spans = CollectedSpans()
    with recording(spans):
        with pytest.raises(ValueError), open_span("chat", "chat m"):
            raise ValueError("boom")
        task = asyncio.ensure_future(asyncio.sleep(10))

        async def waits() -> None:
            with open_span("chat", "chat n"):
                await task

        waiting = asyncio.ensure_future(waits())
        await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        with open_span("chat", "chat o") as span:
            assert span is not None
            span.status = "error"  # as a failed run's result says
    failed, cancelled, marked = spans.spans
    assert (failed.status, failed.attributes[ERROR_TYPE]) == ("error", "ValueError")
    assert cancelled.status == "cancelled" and ERROR_TYPE not in cancelled.attributes
    assert marked.status == "error"


def test_content_is_set_only_when_captured_and_then_redacted() -> None:
    redactor = Redactor(["Zq81own0Key9Lm27"])
    arguments = {"command": "echo Zq81own0Key9Lm27 token=abc123def456"}
    for capture in (False, True):
        spans = CollectedSpans()
        with (
            recording(spans, capture_content=capture),
            open_span("execute_tool", "execute_tool shell") as span,
        ):
            set_span_content(span, TOOL_CALL_ARGUMENTS, arguments, redactor)
        (recorded,) = spans.spans
        if not capture:
            assert TOOL_CALL_ARGUMENTS not in recorded.attributes
            continue
        value = recorded.attributes[TOOL_CALL_ARGUMENTS]
        assert isinstance(value, str)
        assert "Zq81own0Key9Lm27" not in value and "abc123def456" not in value
        assert "[redacted]" in value


def test_content_is_bounded_and_its_surrogates_escaped() -> None:
    """As storePayloads' redacted payloads: at most PAYLOAD_LIMIT characters,
    a cut marked, and no lone surrogate left (protobuf could not encode it)."""
    long_messages = [{"role": "user", "content": "x" * 50_000}]
    spans = CollectedSpans()
    with (
        recording(spans, capture_content=True),
        open_span("invoke_agent", "invoke_agent a") as span,
    ):
        set_span_content(span, INPUT_MESSAGES, long_messages, Redactor([]))
        set_span_content(span, OUTPUT_MESSAGES, "half a pair: \ud800", Redactor([]))
    (recorded,) = spans.spans
    bounded = recorded.attributes[INPUT_MESSAGES]
    assert isinstance(bounded, str) and len(bounded) == PAYLOAD_LIMIT
    assert bounded.startswith('[{"role":"user","content":"xxx') and bounded.endswith(TRUNCATED)
    assert recorded.attributes[OUTPUT_MESSAGES] == "half a pair: \\ud800"


def test_usage_counts_cached_input_in_the_input_tokens() -> None:
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 20,
    }
    assert usage_attributes(usage) == {  # type: ignore[arg-type]
        "gen_ai.usage.input_tokens": 130,
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.usage.cache_read.input_tokens": 100,
        "gen_ai.usage.cache_creation.input_tokens": 20,
    }


def test_a_span_is_a_slotted_dataclass() -> None:
    span = Span("a" * 32, "b" * 16, None, None, "chat", "chat m", 1)
    assert not hasattr(span, "__dict__") and span.duration_ns == 0
