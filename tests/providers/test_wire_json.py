"""A request body's conversation is spliced in from its messages' JSON
(``providers/http_client.json_body``, ``providers/wire_prefix.WireMessages``):
the bytes are the whole body's JSON, and a message kept from the last request
is not encoded again."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oma_host.providers import http_client
from oma_host.providers.http_client import json_body
from oma_host.providers.wire_prefix import WireMessages, WirePrefix


def _whole(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _array(wire: WireMessages, encode: Callable[[Any], bytes]) -> bytes:
    """The messages as the JSON array a body holds."""
    return b"[" + b",".join(wire.json_items(encode)) + b"]"


def _message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _convert(message: Any, index: int) -> list[dict[str, Any]]:
    return [{"role": message["role"], "text": message["content"][0]["text"], "at": index}]


def test_a_growing_conversation_encodes_only_its_new_messages() -> None:
    prefix = WirePrefix()
    encoded: list[Any] = []

    def counting(value: Any) -> bytes:
        encoded.append(value)
        return _whole(value)

    history = [_message("user", "first ✓")]
    first = prefix.render(history, _convert)
    assert _array(first, counting) == _whole(list(first))
    history += [_message("assistant", "ok"), _message("user", 'second "quoted" \u2028')]
    encoded.clear()
    second = prefix.render(history, _convert)
    second[-1] = {**second[-1], "mark": True}  # as an adapter marks the last message
    assert _array(second, counting) == _whole(list(second))
    assert encoded == [second[1], second[2]]  # the first message's JSON was kept
    encoded.clear()
    third = prefix.render(history, _convert)  # the marked copy was never kept
    assert _array(third, counting) == _whole(list(third))
    assert encoded == [third[2]]


def test_messages_rendered_before_the_latest_are_encoded_whole() -> None:
    prefix = WirePrefix()
    older = prefix.render([_message("user", "one"), _message("assistant", "two")], _convert)
    newer = prefix.render([_message("user", "one"), _message("user", "other")], _convert)
    assert _array(newer, _whole) == _whole(list(newer))
    assert _array(older, _whole) == _whole(list(older))
    again = prefix.render([_message("user", "one"), _message("user", "other")], _convert)
    assert _array(again, _whole) == _whole(list(newer))


def test_a_conversation_that_changed_midway_is_encoded_as_it_is_now() -> None:
    prefix = WirePrefix()
    history = [_message("user", "one"), _message("assistant", "two"), _message("user", "three")]
    _array(prefix.render(history, _convert), _whole)
    shorter = prefix.render([history[0], _message("user", "compacted")], _convert)
    assert _array(shorter, _whole) == _whole(list(shorter))
    wire = prefix.render([history[0], _message("user", "compacted"), history[1]], _convert)
    del wire[0]  # an adapter may drop a message: what is there is what is sent
    assert _array(wire, _whole) == _whole(list(wire))


def test_a_body_is_its_whole_json_with_a_message_put_first() -> None:
    prefix = WirePrefix()
    history = [_message("user", "hello"), _message("assistant", "hi")]
    prefix.render(history, _convert)
    wire = prefix.render([*history, _message("user", "again")], _convert)
    messages = wire.prepended({"role": "system", "content": "brief"})
    body = {"model": "m", "messages": messages, "stream": True, "tools": [{"name": "t"}]}
    assert json_body(body) == _whole({**body, "messages": list(messages)})


def test_a_body_holding_the_placeholder_is_encoded_whole() -> None:
    wire = WirePrefix().render([_message("user", "hello")], _convert)
    body = {"system": http_client._SLOT, "messages": wire}
    assert json_body(body) == _whole({**body, "messages": list(wire)})
    assert json.loads(json_body(body))["system"] == http_client._SLOT
