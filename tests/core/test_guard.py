"""The shape guard (docs/protocol.md, "The shape guard") and the copying rules of
``oma_host.core.messages``: guard_run_input, guard_prompt_input, guard_messages,
latest_user_prompt and rewrite_latest_prompt."""

from __future__ import annotations

import base64
import copy
import socket
from enum import Enum
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_host.core.errors import InvalidMessageError, OmaError
from oma_host.core.guard import guard_messages, guard_prompt_input, guard_run_input
from oma_host.core.messages import latest_user_prompt, rewrite_latest_prompt
from tests.builders import assistant, image, text, tool_result, user

# --------------------------------------------------------------------------
# helpers


def with_block(block: Any) -> list[Any]:
    """A run input whose only block is ``block``: its path is input[0].content[0]."""
    return [user(block)]


B64 = {"type": "base64", "media_type": "image/png", "data": "AAAA"}
URL = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}


def container_ids(value: Any) -> set[int]:
    """ids of every dict and list reachable from ``value``."""
    found: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found.add(id(item))
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            found.add(id(item))
            stack.extend(item)
    return found


def assert_no_aliasing(original: Any, guarded: Any) -> None:
    shared = container_ids(original) & container_ids(guarded)
    assert not shared, "the guarded copy shares a dict or list with the caller's data"


def expect_invalid(call: Any, path: str, fragment: str) -> InvalidMessageError:
    with pytest.raises(InvalidMessageError) as info:
        call()
    assert info.value.path == path
    assert str(info.value).startswith(path)
    assert fragment in str(info.value)
    return info.value


# --------------------------------------------------------------------------
# table: invalid run inputs (path, message fragment)

INVALID_RUN_INPUTS: list[tuple[str, Any, str, str]] = [
    # rule 1: string or array, not empty
    ("number input", 42, "input", "must be a string or an array of messages"),
    ("None input", None, "input", "must be a string or an array of messages"),
    (
        "object input",
        {"role": "user", "content": []},
        "input",
        "must be a string or an array of messages",
    ),
    ("bytes input", b"hello", "input", "must be a string or an array of messages"),
    ("empty array", [], "input", "must not be an empty array"),
    # rule 2: messages
    ("message is a string", ["hello"], "input[0]", "must be an object"),
    ("message is a list", [[text("a")]], "input[0]", "must be an object"),
    ("second message not object", [user(text("a")), 7], "input[1]", "must be an object"),
    ("role missing", [{"content": [text("a")]}], "input[0].role", 'must be "user" or "assistant"'),
    (
        "role system",
        [{"role": "system", "content": [text("a")]}],
        "input[0].role",
        'must be "user" or "assistant"',
    ),
    (
        "role capitalised",
        [{"role": "User", "content": [text("a")]}],
        "input[0].role",
        'must be "user" or "assistant"',
    ),
    (
        "content is a string",
        [{"role": "user", "content": "hello"}],
        "input[0].content",
        'must be an array of blocks; for text use [{"type": "text", "text": ...}] or pass a '
        "string as input",
    ),
    ("content missing", [{"role": "user"}], "input[0].content", "must be an array"),
    (
        "content is an object",
        [{"role": "user", "content": {"type": "text"}}],
        "input[0].content",
        "must be an array",
    ),
    # rule 3: blocks
    ("block is a string", with_block("hello"), "input[0].content[0]", "must be an object"),
    ("block is None", with_block(None), "input[0].content[0]", "must be an object"),
    (
        "block type missing",
        with_block({"text": "a"}),
        "input[0].content[0].type",
        "must be a string",
    ),
    (
        "block type number",
        with_block({"type": 3, "text": "a"}),
        "input[0].content[0].type",
        "must be a string",
    ),
    (
        "later block bad",
        [user(text("a"), text("b")), assistant(text("c"), {"type": None})],
        "input[1].content[1].type",
        "must be a string",
    ),
    # text
    ("text missing", with_block({"type": "text"}), "input[0].content[0].text", "must be a string"),
    (
        "text number",
        with_block({"type": "text", "text": 1}),
        "input[0].content[0].text",
        "must be a string",
    ),
    (
        "text list",
        with_block({"type": "text", "text": ["a"]}),
        "input[0].content[0].text",
        "must be a string",
    ),
    # image
    (
        "image source missing",
        with_block({"type": "image"}),
        "input[0].content[0].source",
        "must be an object",
    ),
    (
        "image source string",
        with_block({"type": "image", "source": "data:..."}),
        "input[0].content[0].source",
        "must be an object",
    ),
    (
        "image source url not allowed",
        with_block({"type": "image", "source": URL}),
        "input[0].content[0].source.type",
        'must be "base64"',
    ),
    (
        "image source type missing",
        with_block({"type": "image", "source": {"media_type": "image/png", "data": "A"}}),
        "input[0].content[0].source.type",
        'must be "base64"',
    ),
    (
        "image media_type missing",
        with_block({"type": "image", "source": {"type": "base64", "data": "A"}}),
        "input[0].content[0].source.media_type",
        "must be a string",
    ),
    (
        "image media_type number",
        with_block({"type": "image", "source": {"type": "base64", "media_type": 1, "data": "A"}}),
        "input[0].content[0].source.media_type",
        "must be a string",
    ),
    (
        "image data missing",
        with_block({"type": "image", "source": {"type": "base64", "media_type": "image/png"}}),
        "input[0].content[0].source.data",
        "must be a string",
    ),
    (
        "image data bytes are not plain data",
        with_block(
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": b"AA"},
            }
        ),
        "input[0].content[0].source.data",
        "builtins.bytes object; messages must contain cloneable structured data",
    ),
    # tool_use
    (
        "tool_use id missing",
        with_block({"type": "tool_use", "name": "n", "input": {}}),
        "input[0].content[0].id",
        "must be a string",
    ),
    (
        "tool_use id number",
        with_block({"type": "tool_use", "id": 1, "name": "n", "input": {}}),
        "input[0].content[0].id",
        "must be a string",
    ),
    (
        "tool_use name missing",
        with_block({"type": "tool_use", "id": "i", "input": {}}),
        "input[0].content[0].name",
        "must be a string",
    ),
    (
        "tool_use name None",
        with_block({"type": "tool_use", "id": "i", "name": None, "input": {}}),
        "input[0].content[0].name",
        "must be a string",
    ),
    (
        "tool_use input missing",
        with_block({"type": "tool_use", "id": "i", "name": "n"}),
        "input[0].content[0].input",
        "must be an object",
    ),
    (
        "tool_use input list",
        with_block({"type": "tool_use", "id": "i", "name": "n", "input": [1, 2]}),
        "input[0].content[0].input",
        "must be an object",
    ),
    (
        "tool_use input string",
        with_block({"type": "tool_use", "id": "i", "name": "n", "input": "{}"}),
        "input[0].content[0].input",
        "must be an object",
    ),
    # tool_result
    (
        "tool_result tool_use_id missing",
        with_block({"type": "tool_result", "content": "x"}),
        "input[0].content[0].tool_use_id",
        "must be a string",
    ),
    (
        "tool_result tool_use_id number",
        with_block({"type": "tool_result", "tool_use_id": 5, "content": "x"}),
        "input[0].content[0].tool_use_id",
        "must be a string",
    ),
    (
        "tool_result is_error string",
        with_block(tool_result("x", is_error="true")),
        "input[0].content[0].is_error",
        "must be a boolean",
    ),
    (
        "tool_result is_error None",
        with_block(tool_result("x", is_error=None)),
        "input[0].content[0].is_error",
        "must be a boolean",
    ),
    (
        "tool_result is_error int",
        with_block(tool_result("x", is_error=1)),
        "input[0].content[0].is_error",
        "must be a boolean",
    ),
    (
        "tool_result content missing",
        with_block({"type": "tool_result", "tool_use_id": "t"}),
        "input[0].content[0].content",
        "must be a string or an array of parts",
    ),
    (
        "tool_result content number",
        with_block(tool_result(12)),
        "input[0].content[0].content",
        "must be a string or an array of parts",
    ),
    (
        "tool_result content object",
        with_block(tool_result({"type": "text", "text": "a"})),
        "input[0].content[0].content",
        "must be a string or an array of parts",
    ),
    (
        "tool_result is_error true with parts",
        with_block(tool_result([text("a")], is_error=True)),
        "input[0].content[0].content",
        "must be a string when is_error is true",
    ),
    (
        "tool_result is_error true without content",
        with_block({"type": "tool_result", "tool_use_id": "t", "is_error": True}),
        "input[0].content[0].content",
        "must be a string when is_error is true",
    ),
    (
        "tool_result part not object",
        with_block(tool_result([text("a"), "b"])),
        "input[0].content[0].content[1]",
        "must be an object",
    ),
    (
        "tool_result part type missing",
        with_block(tool_result([{"text": "a"}])),
        "input[0].content[0].content[0].type",
        'must be "text", "image" or "file"',
    ),
    (
        "tool_result part type unknown",
        with_block(tool_result([{"type": "audio"}])),
        "input[0].content[0].content[0].type",
        'must be "text", "image" or "file"',
    ),
    (
        "tool_result part type tool_use",
        with_block(tool_result([{"type": "tool_use", "id": "i", "name": "n", "input": {}}])),
        "input[0].content[0].content[0].type",
        'must be "text", "image" or "file"',
    ),
    (
        "tool_result text part text missing",
        with_block(tool_result([{"type": "text"}])),
        "input[0].content[0].content[0].text",
        "must be a string",
    ),
    (
        "tool_result text part text number",
        with_block(tool_result([{"type": "text", "text": 2}])),
        "input[0].content[0].content[0].text",
        "must be a string",
    ),
    (
        "tool_result image part source missing",
        with_block(tool_result([{"type": "image"}])),
        "input[0].content[0].content[0].source",
        "must be an object",
    ),
    (
        "tool_result image part bad source type",
        with_block(tool_result([{"type": "image", "source": {**B64, "type": "file"}}])),
        "input[0].content[0].content[0].source.type",
        'must be "base64" or "url"',
    ),
    (
        "tool_result image part base64 data missing",
        with_block(
            tool_result(
                [{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}]
            )
        ),
        "input[0].content[0].content[0].source.data",
        "must be a string",
    ),
    (
        "tool_result image part url missing",
        with_block(
            tool_result([{"type": "image", "source": {"type": "url", "media_type": "image/png"}}])
        ),
        "input[0].content[0].content[0].source.url",
        "must be a string",
    ),
    (
        "tool_result image part url media_type missing",
        with_block(tool_result([{"type": "image", "source": {"type": "url", "url": "u"}}])),
        "input[0].content[0].content[0].source.media_type",
        "must be a string",
    ),
    (
        "tool_result file part filename missing",
        with_block(tool_result([{"type": "file", "source": URL}])),
        "input[0].content[0].content[0].filename",
        "must be a string",
    ),
    (
        "tool_result file part filename number",
        with_block(tool_result([{"type": "file", "filename": 1, "source": B64}])),
        "input[0].content[0].content[0].filename",
        "must be a string",
    ),
    (
        "tool_result file part source missing",
        with_block(tool_result([{"type": "file", "filename": "a.pdf"}])),
        "input[0].content[0].content[0].source",
        "must be an object",
    ),
    (
        "tool_result file part url number",
        with_block(
            tool_result(
                [
                    {
                        "type": "file",
                        "filename": "a.pdf",
                        "source": {"type": "url", "media_type": "a/b", "url": 3},
                    }
                ]
            )
        ),
        "input[0].content[0].content[0].source.url",
        "must be a string",
    ),
    (
        "tool_result file part base64 data number",
        with_block(
            tool_result(
                [text("ok"), {"type": "file", "filename": "a.pdf", "source": {**B64, "data": 3}}]
            )
        ),
        "input[0].content[0].content[1].source.data",
        "must be a string",
    ),
    # reasoning
    (
        "reasoning text missing",
        with_block({"type": "reasoning"}),
        "input[0].content[0].text",
        "must be a string",
    ),
    (
        "reasoning text number",
        with_block({"type": "reasoning", "text": 0}),
        "input[0].content[0].text",
        "must be a string",
    ),
    (
        "reasoning signature number",
        with_block({"type": "reasoning", "text": "t", "signature": 1}),
        "input[0].content[0].signature",
        "must be a string",
    ),
    (
        "reasoning signature None",
        with_block({"type": "reasoning", "text": "t", "signature": None}),
        "input[0].content[0].signature",
        "must be a string",
    ),
    (
        "reasoning redactedData list",
        with_block({"type": "reasoning", "text": "t", "redactedData": ["x"]}),
        "input[0].content[0].redactedData",
        "must be a string",
    ),
    # the example (docs/protocol.md, "The shape guard")
    (
        "protocol example",
        [
            user(text("a")),
            assistant(text("b")),
            user(text("c"), {"type": "image", "source": {**B64, "data": 1}}),
        ],
        "input[2].content[1].source.data",
        "must be a string",
    ),
]


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [pytest.param(v, p, f, id=name) for name, v, p, f in INVALID_RUN_INPUTS],
)
def test_guard_run_input_rejects_with_path_and_reason(value: Any, path: str, fragment: str):
    error = expect_invalid(lambda: guard_run_input(value), path, fragment)
    assert error.error_data() == {"type": "InvalidMessageError", "path": path}


def test_protocol_example_message_is_exact():
    value = [user(text("a")), assistant(text("b")), user(text("c"), image(data=1))]  # type: ignore[arg-type]
    with pytest.raises(InvalidMessageError) as info:
        guard_run_input(value)
    assert str(info.value) == "input[2].content[1].source.data must be a string"
    assert info.value.path == "input[2].content[1].source.data"


def test_invalid_message_error_is_a_value_error_and_oma_error_with_code_32602():
    with pytest.raises(InvalidMessageError) as info:
        guard_run_input([])
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, OmaError)
    assert info.value.code == -32602


def test_first_violation_is_reported():
    value = [{"role": "bot", "content": 5}, "not a message"]
    expect_invalid(lambda: guard_run_input(value), "input[0].role", "must be")


INVALID_PROMPT_INPUTS: list[tuple[str, Any, str, str]] = [
    ("number", 1, "input", "must be a string or an array of blocks"),
    ("None", None, "input", "must be a string or an array of blocks"),
    ("single block object", text("a"), "input", "must be a string or an array of blocks"),
    ("empty array", [], "input", "must not be an empty array"),
    ("block is string", ["hello"], "input[0]", "must be an object"),
    ("a message instead of a block", [user(text("a"))], "input[0].type", "must be a string"),
    ("block type missing", [text("a"), {"text": "b"}], "input[1].type", "must be a string"),
    ("text missing", [{"type": "text"}], "input[0].text", "must be a string"),
    (
        "image data",
        [text("a"), image(data=None)],
        "input[1].source.data",  # type: ignore[arg-type]
        "must be a string",
    ),
    (
        "tool_use input",
        [{"type": "tool_use", "id": "i", "name": "n", "input": None}],
        "input[0].input",
        "must be an object",
    ),
    (
        "tool_result part",
        [tool_result([{"type": "video"}])],
        "input[0].content[0].type",
        'must be "text", "image" or "file"',
    ),
    (
        "reasoning redactedData",
        [{"type": "reasoning", "text": "", "redactedData": 1}],
        "input[0].redactedData",
        "must be a string",
    ),
]


@pytest.mark.parametrize(
    ("value", "path", "fragment"),
    [pytest.param(v, p, f, id=name) for name, v, p, f in INVALID_PROMPT_INPUTS],
)
def test_guard_prompt_input_rejects_with_path_and_reason(value: Any, path: str, fragment: str):
    expect_invalid(lambda: guard_prompt_input(value), path, fragment)


def test_guard_messages_uses_the_given_path_prefix():
    expect_invalid(
        lambda: guard_messages(
            [user(text("a")), {"role": "user", "content": [{"type": 1}]}], "config.history"
        ),
        "config.history[1].content[0].type",
        "must be a string",
    )
    expect_invalid(
        lambda: guard_messages([], "config.history"), "config.history", "must not be an empty array"
    )


def test_guard_messages_rejects_a_string_without_claiming_strings_are_allowed():
    # A message list (config.history, beforeRun.messages) has no string shorthand:
    # the error must not tell the caller that a string would have been fine.
    with pytest.raises(InvalidMessageError) as info:
        guard_messages("hello", "config.history")
    assert info.value.path == "config.history"
    assert "must be a string" not in str(info.value)
    assert "array" in str(info.value)


# --------------------------------------------------------------------------
# valid inputs


def test_string_run_input_is_one_user_text_message():
    assert guard_run_input("hi") == [user(text("hi"))]
    assert guard_run_input("") == [user(text(""))]


def test_string_prompt_input_is_one_user_text_message():
    assert guard_prompt_input("hi") == user(text("hi"))


def test_prompt_blocks_become_exactly_one_user_message():
    blocks = [text("a"), image(), {"type": "custom", "x": 1}]
    assert guard_prompt_input(blocks) == {"role": "user", "content": blocks}


def test_every_known_block_kind_passes():
    value = [
        user(
            text("t"),
            image(),
            tool_result("plain"),
            tool_result("failure", is_error=True),
            tool_result("ok", is_error=False),
            tool_result([]),
            tool_result(
                [
                    text("a"),
                    {"type": "image", "source": B64},
                    {"type": "image", "source": URL},
                    {"type": "file", "filename": "f.pdf", "source": B64},
                    {"type": "file", "filename": "g.pdf", "source": URL},
                ]
            ),
        ),
        assistant(
            {"type": "reasoning", "text": "r"},
            {"type": "reasoning", "text": "r", "signature": "s", "redactedData": "d"},
            {"type": "tool_use", "id": "i", "name": "n", "input": {"a": [1, {"b": None}]}},
        ),
        user(),  # an empty content array is an array
    ]
    assert guard_run_input(value) == value


@pytest.mark.parametrize(
    "block",
    [
        {"type": "document", "source": {"anything": [1, 2]}, "title": 5},
        {"type": "server_tool_use", "id": 7},
        {"type": ""},
        {"type": "file", "filename": 3},  # "file" is a part type, not a block type
        {"type": "TEXT", "text": 1},
    ],
)
def test_unknown_block_types_pass_unchanged(block: dict[str, Any]):
    original = copy.deepcopy(block)
    assert guard_run_input(with_block(block)) == with_block(original)
    assert guard_prompt_input([block]) == user(original)


def test_extra_fields_on_known_blocks_are_kept():
    block = {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}
    assert guard_run_input(with_block(block))[0]["content"][0] == block


# --------------------------------------------------------------------------
# copy rules


def test_guarded_copy_is_independent_of_later_caller_mutation():
    source = {"type": "base64", "media_type": "image/png", "data": "AAAA"}
    tool_input = {"path": "a.txt", "opts": {"n": [1, 2]}}
    blocks = [
        text("hello"),
        {"type": "image", "source": source},
        {"type": "tool_use", "id": "t1", "name": "read", "input": tool_input},
    ]
    message = {"role": "user", "content": blocks}
    caller = [message]
    expected = copy.deepcopy(caller)

    guarded = guard_run_input(caller)

    caller.append(user(text("later")))
    message["role"] = "assistant"
    blocks.append(text("appended"))
    blocks[0]["text"] = "changed"
    source["data"] = "BBBB"
    source["media_type"] = "image/gif"
    tool_input["path"] = "/etc/passwd"
    tool_input["opts"]["n"].append(3)
    assert guarded == expected


def test_prompt_copy_is_independent_of_later_caller_mutation():
    tool_input = {"q": ["x"]}
    blocks = [text("a"), {"type": "tool_use", "id": "t", "name": "n", "input": tool_input}]
    expected = user(*copy.deepcopy(blocks))
    guarded = guard_prompt_input(blocks)
    blocks[0]["text"] = "b"
    tool_input["q"].append("y")
    blocks.clear()
    assert guarded == expected


def test_guard_does_not_mutate_its_input():
    value = [user(text("a"), image()), assistant({"type": "x", "y": [1]})]
    snapshot = copy.deepcopy(value)
    guard_run_input(value)
    assert value == snapshot


def test_the_same_object_twice_becomes_two_independent_copies():
    shared = {"k": [1]}
    value = [
        user(
            {"type": "tool_use", "id": "a", "name": "n", "input": shared},
            {"type": "tool_use", "id": "b", "name": "n", "input": shared},
        )
    ]
    guarded = guard_run_input(value)
    first, second = (block["input"] for block in guarded[0]["content"])
    assert first == second == shared
    assert first is not second
    assert first["k"] is not second["k"]
    assert_no_aliasing(value, guarded)


def _uncopyable_function(x: int) -> int:
    return x


class _Callable:
    def __call__(self) -> None:
        return None


@pytest.mark.parametrize(
    ("value", "description"),
    [
        (_uncopyable_function, "a function"),
        (lambda: None, "a function"),
        (_Callable(), "a function"),
        ({1, 2}, "builtins.set"),
        (frozenset({1}), "builtins.frozenset"),
        (b"raw", "builtins.bytes"),
        (object(), "builtins.object"),
        (1 + 2j, "builtins.complex"),
    ],
)
def test_uncopyable_tool_input_value_is_rejected_with_path_and_kind(value: Any, description: str):
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {"ok": 1, "cb": value}}
    error = expect_invalid(
        lambda: guard_run_input(with_block(block)),
        "input[0].content[0].input.cb",
        "messages must contain cloneable structured data",
    )
    assert description in str(error)


def test_socket_in_tool_input_is_rejected_naming_the_socket():
    with socket.socket() as sock:
        block = {"type": "tool_use", "id": "t", "name": "n", "input": {"conn": sock}}
        error = expect_invalid(
            lambda: guard_run_input(with_block(block)),
            "input[0].content[0].input.conn",
            "cloneable structured data",
        )
    assert "socket.socket" in str(error)


def test_uncopyable_value_deep_in_a_list_names_each_segment():
    block = {
        "type": "tool_use",
        "id": "t",
        "name": "n",
        "input": {"items": [1, {"deep": [None, print]}]},
    }
    expect_invalid(
        lambda: guard_run_input([user(text("a")), user(text("b"), block)]),
        "input[1].content[1].input.items[1].deep[1]",
        "is a function",
    )


def test_uncopyable_value_under_a_non_identifier_key_is_quoted():
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {"my key": {1, 2}}}
    expect_invalid(
        lambda: guard_run_input(with_block(block)),
        "input[0].content[0].input['my key']",
        "builtins.set",
    )


def test_uncopyable_value_in_prompt_blocks_names_the_block_path():
    blocks = [text("a"), {"type": "custom", "payload": {"fn": len}}]
    expect_invalid(lambda: guard_prompt_input(blocks), "input[1].payload.fn", "is a function")


def test_uncopyable_value_in_history_uses_the_history_path():
    history = [user({"type": "tool_use", "id": "t", "name": "n", "input": {"s": {3}}})]
    expect_invalid(
        lambda: guard_messages(history, "config.history"),
        "config.history[0].content[0].input.s",
        "builtins.set",
    )


@pytest.mark.parametrize("key", [1, None, ("a", "b"), 2.5, b"k"])
def test_non_string_dict_keys_are_rejected(key: Any):
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {"fine": {key: "v"}}}
    error = expect_invalid(
        lambda: guard_run_input(with_block(block)),
        "input[0].content[0].input.fine",
        "non-string key",
    )
    assert repr(key) in str(error)


def test_non_string_key_on_a_block_is_rejected():
    expect_invalid(
        lambda: guard_run_input(with_block({"type": "text", "text": "a", 0: 1})),
        "input[0].content[0]",
        "non-string key 0",
    )


def test_tuples_become_lists():
    value = (
        {
            "role": "user",
            "content": (
                text("a"),
                {"type": "tool_use", "id": "t", "name": "n", "input": {"xs": (1, (2, 3))}},
            ),
        },
    )
    guarded = guard_run_input(value)
    assert type(guarded) is list
    assert type(guarded[0]["content"]) is list
    assert guarded[0]["content"][1]["input"]["xs"] == [1, [2, 3]]
    assert type(guarded[0]["content"][1]["input"]["xs"][1]) is list
    prompt = guard_prompt_input((text("a"), text("b")))
    assert type(prompt["content"]) is list


def test_plain_subclasses_become_plain_types():
    class MyDict(dict):  # type: ignore[type-arg]
        pass

    class MyList(list):  # type: ignore[type-arg]
        pass

    class MyInt(int):
        pass

    value = MyList(
        [
            MyDict(
                role="user",
                content=MyList(
                    [MyDict(type="tool_use", id="t", name="n", input=MyDict(n=MyInt(3)))]
                ),
            )
        ]
    )
    guarded = guard_run_input(value)
    assert type(guarded) is list
    assert type(guarded[0]) is dict
    assert type(guarded[0]["content"]) is list
    assert type(guarded[0]["content"][0]["input"]) is dict
    assert type(guarded[0]["content"][0]["input"]["n"]) is int
    assert guarded[0]["content"][0]["input"]["n"] == 3


class _Role(str, Enum):  # noqa: UP042 (the classic str enum, whose str() is "_Role.USER")
    USER = "user"
    ASSISTANT = "assistant"


class _Shouty(str):
    def __str__(self) -> str:
        return self.upper()


def test_str_subclass_values_are_copied_by_content_not_by_their_str():
    # The module promises "Subclasses of the plain types (str enums, ...) become
    # plain": the copy must hold the same characters, never the subclass's __str__.
    guarded = guard_run_input([{"role": "user", "content": [text(_Shouty("quiet"))]}])
    assert guarded[0]["content"][0]["text"] == "quiet"
    assert type(guarded[0]["content"][0]["text"]) is str


def test_str_enum_role_is_accepted_as_its_value():
    guarded = guard_run_input([{"role": _Role.USER, "content": [text("a")]}])
    assert guarded == [user(text("a"))]
    assert type(guarded[0]["role"]) is str


def test_very_deep_nesting_is_an_invalid_message_error_not_recursion_error():
    deep: Any = "leaf"
    for _ in range(100_000):
        deep = [deep]
    block = {"type": "tool_use", "id": "t", "name": "n", "input": {"deep": deep}}
    with pytest.raises(InvalidMessageError) as info:
        guard_run_input(with_block(block))
    assert "nested too deeply" in str(info.value)
    assert info.value.path.startswith("input")


def test_very_deep_nesting_in_prompt_blocks_is_an_invalid_message_error():
    deep: Any = {}
    for _ in range(100_000):
        deep = {"d": deep}
    with pytest.raises(InvalidMessageError):
        guard_prompt_input([{"type": "custom", "x": deep}])


def test_moderate_nesting_is_accepted():
    deep: Any = "leaf"
    for _ in range(200):
        deep = {"d": [deep]}
    block = {"type": "tool_use", "id": "t", "name": "n", "input": deep}
    guarded = guard_run_input(with_block(block))
    assert guarded[0]["content"][0]["input"] == deep


def test_large_base64_string_is_shared_not_duplicated():
    data = "QUJD" * 5_000_000  # 20 MB
    value = [user(text("look"), image(data=data))]
    guarded = guard_run_input(value)
    assert guarded[0]["content"][1]["source"]["data"] is data
    assert guarded[0]["content"][1]["source"] is not value[0]["content"][1]["source"]
    prompt = guard_prompt_input([image(data=data)])
    assert prompt["content"][0]["source"]["data"] is data
    history = guard_messages(value, "config.history")
    assert history[0]["content"][1]["source"]["data"] is data


# --------------------------------------------------------------------------
# hypothesis: valid lists survive unchanged; one corruption is found at its path

KNOWN_TYPES = {"text", "image", "tool_use", "tool_result", "reasoning"}

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=8,
)

b64_sources = st.fixed_dictionaries(
    {
        "type": st.just("base64"),
        "media_type": st.text(max_size=10),
        "data": st.binary(min_size=1, max_size=15).map(lambda raw: base64.b64encode(raw).decode()),
    }
)
url_sources = st.fixed_dictionaries(
    {"type": st.just("url"), "media_type": st.text(max_size=10), "url": st.text(max_size=20)}
)
media_sources = b64_sources | url_sources

text_blocks = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)})
image_blocks = st.fixed_dictionaries({"type": st.just("image"), "source": b64_sources})
tool_use_blocks = st.fixed_dictionaries(
    {
        "type": st.just("tool_use"),
        "id": st.text(max_size=8),
        "name": st.text(max_size=8),
        "input": st.dictionaries(st.text(max_size=5), json_values, max_size=3),
    }
)
tool_result_parts = st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)})
    | st.fixed_dictionaries({"type": st.just("image"), "source": media_sources})
    | st.fixed_dictionaries(
        {"type": st.just("file"), "filename": st.text(max_size=10), "source": media_sources}
    ),
    max_size=3,
)
tool_result_blocks = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": st.text(max_size=8),
            "content": st.text(max_size=10) | tool_result_parts,
        },
        optional={"is_error": st.just(False)},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": st.text(max_size=8),
            "content": st.text(max_size=10),
            "is_error": st.just(True),
        }
    ),
)
reasoning_blocks = st.fixed_dictionaries(
    {"type": st.just("reasoning"), "text": st.text(max_size=20)},
    optional={"signature": st.text(max_size=10), "redactedData": st.text(max_size=10)},
)
unknown_blocks = st.builds(
    lambda kind, extra: {**extra, "type": kind},
    st.text(max_size=12).filter(lambda kind: kind not in KNOWN_TYPES),
    st.dictionaries(st.text(max_size=6), json_values, max_size=3),
)
blocks = (
    text_blocks
    | image_blocks
    | tool_use_blocks
    | tool_result_blocks
    | reasoning_blocks
    | unknown_blocks
)
messages_strategy = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.lists(blocks, max_size=4)}
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(messages_strategy)
def test_property_valid_messages_come_back_equal_and_unaliased(messages: list[Any]):
    snapshot = copy.deepcopy(messages)
    guarded = guard_run_input(messages)
    assert guarded == snapshot
    assert messages == snapshot
    assert_no_aliasing(messages, guarded)
    history = guard_messages(messages, "config.history")
    assert history == snapshot
    assert_no_aliasing(messages, history)
    assert_no_aliasing(guarded, history)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(blocks, min_size=1, max_size=5))
def test_property_valid_prompt_blocks_come_back_equal_and_unaliased(block_list: list[Any]):
    snapshot = copy.deepcopy(block_list)
    guarded = guard_prompt_input(block_list)
    assert guarded == {"role": "user", "content": snapshot}
    assert_no_aliasing(block_list, guarded)


# A corruption site: (location of the container as key segments, the key or
# index inside it, whether the field may be removed to make the input invalid,
# the values that are of the wrong type there).
Segment = str | int
Site = tuple[tuple[Segment, ...], Segment, bool, tuple[Any, ...]]

NOT_A_STRING: tuple[Any, ...] = (17, None, ["x"], {"a": 1}, 2.5, True)
NOT_AN_OBJECT: tuple[Any, ...] = (17, None, "obj", ["x"], True)
NOT_AN_ARRAY: tuple[Any, ...] = (17, None, "abc", {"a": 1}, True)
NOT_CONTENT: tuple[Any, ...] = (17, None, {"a": 1}, True)  # neither string nor array
NOT_A_BOOL: tuple[Any, ...] = (1, 0, "true", None, [True])
NOT_A_ROLE: tuple[Any, ...] = (17, None, "system", "", ["user"])


def _source_sites(where: tuple[Segment, ...], source: dict[str, Any]) -> list[Site]:
    sites: list[Site] = [
        (where, "type", True, NOT_A_STRING),
        (where, "media_type", True, NOT_A_STRING),
    ]
    sites.append((where, "data" if source["type"] == "base64" else "url", True, NOT_A_STRING))
    return sites


def _block_sites(where: tuple[Segment, ...], block: dict[str, Any]) -> list[Site]:
    kind = block["type"]
    sites: list[Site] = [(where, "type", True, NOT_A_STRING)]
    if kind in ("text", "reasoning"):
        sites.append((where, "text", True, NOT_A_STRING))
    if kind == "reasoning":
        sites.extend(
            (where, key, False, NOT_A_STRING)
            for key in ("signature", "redactedData")
            if key in block
        )
    if kind == "image":
        sites.append((where, "source", True, NOT_AN_OBJECT))
        sites.extend(_source_sites((*where, "source"), block["source"]))
    if kind == "tool_use":
        sites.append((where, "id", True, NOT_A_STRING))
        sites.append((where, "name", True, NOT_A_STRING))
        sites.append((where, "input", True, NOT_AN_OBJECT))
    if kind == "tool_result":
        sites.append((where, "tool_use_id", True, NOT_A_STRING))
        sites.append((where, "content", True, NOT_CONTENT))
        if "is_error" in block:
            sites.append((where, "is_error", False, NOT_A_BOOL))
        if isinstance(block["content"], list):
            for index, part in enumerate(block["content"]):
                part_at = (*where, "content", index)
                sites.append(((*where, "content"), index, False, NOT_AN_OBJECT))
                sites.append((part_at, "type", True, NOT_A_STRING))
                if part["type"] == "text":
                    sites.append((part_at, "text", True, NOT_A_STRING))
                else:
                    if part["type"] == "file":
                        sites.append((part_at, "filename", True, NOT_A_STRING))
                    sites.append((part_at, "source", True, NOT_AN_OBJECT))
                    sites.extend(_source_sites((*part_at, "source"), part["source"]))
    return sites


def corruption_sites(messages: list[dict[str, Any]]) -> list[Site]:
    sites: list[Site] = []
    for m_index, message in enumerate(messages):
        sites.append(((), m_index, False, NOT_AN_OBJECT))
        sites.append(((m_index,), "role", True, NOT_A_ROLE))
        sites.append(((m_index,), "content", True, NOT_AN_ARRAY))
        for b_index, block in enumerate(message["content"]):
            where = (m_index, "content", b_index)
            sites.append(((m_index, "content"), b_index, False, NOT_AN_OBJECT))
            sites.extend(_block_sites(where, block))
    return sites


def render_path(base: str, segments: tuple[Segment, ...]) -> str:
    out = base
    for segment in segments:
        out += f"[{segment}]" if isinstance(segment, int) else f".{segment}"
    return out


def locate(root: Any, segments: tuple[Segment, ...]) -> Any:
    for segment in segments:
        root = root[segment]
    return root


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(messages_strategy, st.data())
def test_property_one_corruption_is_reported_at_its_field(messages: list[Any], data: Any):
    sites = corruption_sites(messages)
    container_at, key, removable, wrong_values = data.draw(st.sampled_from(sites), label="site")
    actions = ["wrong type", "remove"] if removable else ["wrong type"]
    action = data.draw(st.sampled_from(actions), label="action")
    corrupted = copy.deepcopy(messages)
    container = locate(corrupted, container_at)
    if action == "remove":
        del container[key]
    else:
        container[key] = data.draw(st.sampled_from(wrong_values), label="value")

    with pytest.raises(InvalidMessageError) as info:
        guard_run_input(corrupted)
    # Removed fields are reported at the field itself (the guard reads a missing
    # field as a value of the wrong type), just like fields of the wrong type.
    expected = render_path("input", (*container_at, key))
    assert info.value.path == expected
    assert str(info.value).startswith(expected + " must ")


# --------------------------------------------------------------------------
# latest_user_prompt and rewrite_latest_prompt


def test_latest_user_prompt_concatenates_text_blocks_without_separator():
    messages = [
        user(text("old")),
        assistant(text("reply")),
        user(text("Hello"), image(), text(" world"), text("!")),
    ]
    assert latest_user_prompt(messages) == "Hello world!"


def test_latest_user_prompt_skips_trailing_assistant_turns():
    messages = [user(text("question")), assistant(text("answer"))]
    assert latest_user_prompt(messages) == "question"


def test_latest_user_prompt_is_empty_for_image_only_turn():
    messages = [user(text("earlier")), assistant(text("r")), user(image())]
    assert latest_user_prompt(messages) == ""


def test_latest_user_prompt_ignores_text_in_other_block_kinds():
    messages = [user({"type": "reasoning", "text": "think"}, tool_result("res"), text("T"))]
    assert latest_user_prompt(messages) == "T"


def test_latest_user_prompt_is_empty_without_a_user_message():
    assert latest_user_prompt([assistant(text("a"))]) == ""


def test_rewrite_puts_one_text_block_where_the_first_text_block_stood():
    first_image, second_image = image(data="ONE"), image(data="TWO")
    tool = {"type": "custom", "k": 1}
    messages = [
        user(text("old")),
        assistant(text("r")),
        user(first_image, text("a"), second_image, text("b"), tool),
    ]
    original = copy.deepcopy(messages)

    rewritten = rewrite_latest_prompt(messages, "NEW")

    assert rewritten[:2] == original[:2]
    assert rewritten[2] == user(first_image, text("NEW"), second_image, tool)
    assert messages == original


def test_rewrite_puts_the_text_block_at_the_front_when_there_was_none():
    messages = [user(image(data="X"), {"type": "custom"}, image(data="Y"))]
    rewritten = rewrite_latest_prompt(messages, "caption")
    assert rewritten == [
        user(text("caption"), image(data="X"), {"type": "custom"}, image(data="Y"))
    ]
    assert messages == [user(image(data="X"), {"type": "custom"}, image(data="Y"))]


def test_rewrite_touches_only_the_latest_user_message():
    messages = [
        user(text("one")),
        assistant(text("two")),
        user(text("three")),
        assistant(text("four")),
    ]
    original = copy.deepcopy(messages)
    rewritten = rewrite_latest_prompt(messages, "3")
    assert rewritten == [
        user(text("one")),
        assistant(text("two")),
        user(text("3")),
        assistant(text("four")),
    ]
    assert messages == original


def test_rewrite_does_not_mutate_the_given_lists_or_blocks():
    content = [text("a"), image()]
    message = {"role": "user", "content": content}
    messages = [message]
    rewrite_latest_prompt(messages, "b")
    assert messages == [message]
    assert message["content"] is content
    assert content == [text("a"), image()]


def test_rewrite_with_empty_string_still_leaves_one_text_block():
    rewritten = rewrite_latest_prompt([user(text("a"), text("b"))], "")
    assert rewritten == [user(text(""))]


def test_rewrite_without_a_user_message_appends_a_user_turn():
    rewritten = rewrite_latest_prompt([assistant(text("a"))], "p")
    assert rewritten == [assistant(text("a")), user(text("p"))]


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ("", "must not be empty"),
        ("not base64!", "must be base64"),
        ("aGVs\nbG8=", "must be base64"),
        ("aGVs=bG8", "must be base64"),
        ("aGVsbG8===", "must be base64"),
        ("aGVsbG8é", "must be base64"),
    ],
)
def test_image_data_must_be_nonempty_base64_at_its_path(data: str, fragment: str):
    block = image(data)
    with pytest.raises(InvalidMessageError) as caught:
        guard_run_input(with_block(block))
    assert caught.value.path == "input[0].content[0].source.data"
    assert fragment in str(caught.value)
    part = {"type": "image", "source": {**B64, "data": data}}
    with pytest.raises(InvalidMessageError, match=fragment):
        guard_run_input(with_block(tool_result([part])))


@pytest.mark.parametrize("data", ["aGVsbG8=", "aGk=", "YQ==", "AAAA", "a+/9"])
def test_base64_image_data_passes(data: str):
    assert guard_run_input(with_block(image(data)))[0]["content"][0]["source"]["data"] == data
