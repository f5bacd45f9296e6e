"""The provider adapters' entry points put their messages through the one
shape guard: called directly with a malformed message, ``chat`` and
``stream`` raise InvalidMessageError naming its path before any request,
not an AttributeError from inside the mapping. The agent loop, whose
messages are guarded already, says so and is not checked twice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from oma_host.core.config import parse_agent_config
from oma_host.core.errors import InvalidMessageError
from oma_host.providers import get_adapter
from oma_host.providers.base import ChatOptions, LLMAdapter
from oma_host.providers.http import close_shared_client
from oma_host.testing.simulator import Reply, Simulator

MALFORMED = [
    ([{"role": "user", "content": "not blocks"}], "messages[0].content"),
    (
        [{"role": "user", "content": [{"type": "image", "source": "x"}]}],
        "messages[0].content[0].source",
    ),
    ([{"role": "system", "content": []}], "messages[0].role"),
    (
        [{"role": "user", "content": [{"type": "text", "text": "x", "f": print}]}],
        "messages[0].content[0].f",
    ),
    ([], "messages"),
]


@pytest.fixture(autouse=True)
async def _own_http_client() -> AsyncIterator[None]:
    """The shared HTTP client belongs to one event loop: each test's own."""
    yield
    await close_shared_client()


def adapter(provider: str, sim: Simulator) -> LLMAdapter:
    config = {"name": "a", "provider": provider, "model": "m", "baseURL": sim.base_url}
    return get_adapter(parse_agent_config({**config, "apiKey": "k"}))


async def _stream(adapter: LLMAdapter, messages: Any, options: ChatOptions) -> list[Any]:
    return [event async for event in adapter.stream(messages, options)]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("entry", ["chat", "stream"])
@pytest.mark.parametrize(("messages", "path"), MALFORMED)
async def test_a_malformed_message_is_an_invalid_message_error_before_any_request(
    provider: str, entry: str, messages: Any, path: str
) -> None:
    with Simulator() as sim:
        chosen = adapter(provider, sim)
        options = ChatOptions(model="m")
        with pytest.raises(InvalidMessageError) as caught:
            if entry == "chat":
                await chosen.chat(messages, options)
            else:
                await _stream(chosen, messages, options)
        assert caught.value.path == path
        assert sim.requests == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_valid_messages_go_through_and_guarded_options_skip_the_check(
    provider: str,
) -> None:
    with Simulator() as sim:
        chosen = adapter(provider, sim)
        messages: Any = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
        sim.script(Reply.text("one"), Reply.text("two"))
        assert (await chosen.chat(messages, ChatOptions(model="m"))).content[0]["text"] == "one"
        # Guarded options trust their messages: the loop's pass is not repeated.
        guarded = ChatOptions(model="m", guarded=True)
        with pytest.raises((AttributeError, TypeError)):
            await chosen.chat([{"role": "user", "content": "not blocks"}], guarded)  # type: ignore[list-item]
        assert (await chosen.chat(messages, guarded)).content[0]["text"] == "two"
