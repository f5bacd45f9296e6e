"""storePayloads, unit by unit: the content-free description, compact JSON
with non-ASCII kept, the 8,192-character bound with its marker inside it,
and surrogates escaped so that no cut splits a pair."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oma_host.core.bounded_text import PAYLOAD_LIMIT, TRUNCATED, bound
from oma_host.orchestration.evaluation.payloads import describe, payload
from tests.builders import image, text, user

KEY = "agent-own-key-0123456789"


def test_descriptions_hold_no_content() -> None:
    messages: Any = [user(text("a")), user(text("b")), user(image())]
    assert describe(messages, "input") == "[array input omitted; 3 items]"
    assert describe("héllo", "output") == "[string output omitted; 5 characters]"
    assert payload(messages, "input", "none", ()) == "[array input omitted; 3 items]"


def test_messages_are_compact_json_with_non_ascii_kept() -> None:
    messages: Any = [user(text("café 日本語"))]
    expected = '[{"role":"user","content":[{"type":"text","text":"café 日本語"}]}]'
    assert payload(messages, "input", "full", ()) == expected
    assert json.loads(expected) == messages


def test_japanese_keeps_8192_characters_not_a_third_of_them() -> None:
    cut = payload("日本語" * 5000, "input", "full", ())
    assert len(cut) == PAYLOAD_LIMIT
    assert cut == ("日本語" * 5000)[: PAYLOAD_LIMIT - len(TRUNCATED)] + TRUNCATED


def test_the_marker_sits_inside_the_bound_and_only_on_a_cut() -> None:
    assert TRUNCATED == "\n[truncated at 8192 characters]"
    exact = "x" * PAYLOAD_LIMIT
    assert bound(exact) == exact
    longer = bound(exact + "y")
    assert len(longer) == PAYLOAD_LIMIT and longer.endswith(TRUNCATED)
    # Cut before redaction shortened it: still marked.
    assert bound("short", cut=True) == "short" + TRUNCATED


def test_surrogates_are_escaped_so_no_cut_splits_a_pair_and_every_payload_is_utf8() -> None:
    # A lone surrogate is valid JSON but has no UTF-8 form; Python code may
    # also build a pair as two code points. Both are written as JSON escapes.
    assert payload("a\ud800b", "input", "full", ()) == "a\\ud800b"
    messages: Any = [user(text("x\udfff"))]
    escaped = payload(messages, "input", "redacted", ())
    assert json.loads(escaped) == messages  # still the JSON of the messages
    keep = PAYLOAD_LIMIT - len(TRUNCATED)
    cut = payload("a" * (keep - 1) + "\ud83d\ude00" * 100, "input", "full", ())
    assert len(cut) == PAYLOAD_LIMIT and cut.endswith(TRUNCATED)
    assert not any("\ud800" <= char <= "\udfff" for char in cut)
    cut.encode()  # every payload can be sent and stored


@pytest.mark.parametrize(("mode", "kept"), [("redacted", False), ("full", True)])
def test_redacted_removes_credentials_and_full_keeps_them_but_never_the_own_key(
    mode: Any, kept: bool
) -> None:
    value = f"{KEY} password=hunter2"
    result = payload(value, "input", mode, (KEY,))
    assert KEY not in result
    assert ("hunter2" in result) is kept


def test_a_long_conversation_is_cut_without_being_serialised_whole() -> None:
    # A 20 MB image after the cut point is never encoded: iterencode stops early.
    messages: Any = [user(text("x" * 40_000)), user(image("A" * 20_000_000))]
    result = payload(messages, "input", "redacted", ())
    assert len(result) == PAYLOAD_LIMIT and result.endswith(TRUNCATED)
    assert result.startswith('[{"role":"user","content":[{"type":"text","text":"xxx')
