"""Block mapping of the provider adapters, both ways, including the blocks a
wire format cannot carry (which must fail, never vanish)."""

from __future__ import annotations

import pytest

from oma_host.providers import anthropic, anthropic_reply, openai
from oma_host.providers.base import ProviderError
from tests.builders import tool_use

B64 = {"type": "base64", "media_type": "image/png", "data": "AAAA"}
URL = {"type": "url", "media_type": "image/png", "url": "https://example.invalid/a.png"}
PDF = {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}


def test_anthropic_maps_rich_tool_results_and_reasoning_unchanged() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "think", "signature": "sig"},
                {"type": "reasoning", "text": "", "redactedData": "opaque"},
                tool_use("t", "look", q=1),
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [
                        {"type": "text", "text": "here"},
                        {"type": "image", "source": URL},
                        {"type": "file", "filename": "r.pdf", "source": PDF},
                    ],
                },
                {"type": "tool_result", "tool_use_id": "u", "content": "bad", "is_error": True},
            ],
        },
    ]
    wire = anthropic.to_wire_messages(messages)  # type: ignore[arg-type]
    assert wire[0]["content"] == [
        {"type": "thinking", "thinking": "think", "signature": "sig"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "t", "name": "look", "input": {"q": 1}},  # Anthropic's wire
    ]
    assert wire[1]["content"][0]["content"] == [
        {"type": "text", "text": "here"},
        {"type": "image", "source": {"type": "url", "url": URL["url"]}},
        {"type": "document", "source": PDF, "title": "r.pdf"},
    ]
    assert wire[1]["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "u",
        "content": "bad",
        "is_error": True,
    }


def test_anthropic_reply_blocks_come_back_as_library_blocks() -> None:
    assert anthropic_reply.from_wire_block(
        {"type": "thinking", "thinking": "t", "signature": "s"}
    ) == {
        "type": "reasoning",
        "text": "t",
        "signature": "s",
    }
    assert anthropic_reply.from_wire_block({"type": "redacted_thinking", "data": "x"}) == {
        "type": "reasoning",
        "text": "",
        "redactedData": "x",
    }


def test_anthropic_refuses_unknown_blocks_and_unsigned_reasoning() -> None:
    with pytest.raises(ProviderError, match=r"messages\[0\].content\[1\].*'audio'"):
        anthropic.to_wire_messages(
            [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "audio"}]}]
        )
    with pytest.raises(ProviderError, match="signature"):
        anthropic.to_wire_messages(
            [{"role": "assistant", "content": [{"type": "reasoning", "text": "x"}]}]
        )


def test_openai_maps_images_tool_calls_and_tool_results() -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image", "source": B64}],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "calling"},
                tool_use("c1", "f", a=[1]),
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": "ok"}],
                },
                {"type": "tool_result", "tool_use_id": "c2", "content": "nope", "is_error": True},
                {"type": "text", "text": "and?"},
            ],
        },
    ]
    wire = openai.to_wire_messages(messages, "sys")  # type: ignore[arg-type]
    assert wire == [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "calling",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a": [1]}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}]},
        {"role": "tool", "tool_call_id": "c2", "content": "[error] nope"},
        {"role": "user", "content": [{"type": "text", "text": "and?"}]},
    ]


@pytest.mark.parametrize(
    ("message", "where"),
    [
        ({"role": "assistant", "content": [{"type": "image", "source": B64}]}, "assistant image"),
        (
            {"role": "assistant", "content": [{"type": "reasoning", "text": "r"}]},
            "assistant reasoning",
        ),
        (
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "image", "source": B64}],
                    }
                ],
            },
            "tool result image part",
        ),
        ({"role": "user", "content": [{"type": "document"}]}, "user document"),
    ],
)
def test_openai_refuses_what_chat_completions_cannot_carry(message: dict, where: str) -> None:
    with pytest.raises(ProviderError, match=where) as caught:
        openai.to_wire_messages([message], None)  # type: ignore[list-item]
    assert caught.value.kind == "unsupported_block"


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            {"type": "reasoning", "text": "r"},
            "anthropic: messages[1].content[1]: a reasoning block without a signature cannot "
            "be sent back as thinking (Anthropic requires the signature it issued)",
        ),
        (
            {"type": "document"},
            "anthropic: messages[1].content[1]: a block of type 'document' cannot be sent to "
            "the Anthropic Messages API",
        ),
    ],
)
def test_anthropic_names_the_block_it_cannot_send(block: dict, message: str) -> None:
    """The block's place is named (it is worked out only for the error)."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, block]},
    ]
    with pytest.raises(ProviderError) as caught:
        anthropic.to_wire_messages(messages)  # type: ignore[arg-type]
    assert str(caught.value) == message and caught.value.kind == "unsupported_block"
