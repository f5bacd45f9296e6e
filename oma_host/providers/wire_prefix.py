"""A conversation's wire form, reused from one request to the next.

An agent sends its whole conversation with every request; :class:`WirePrefix`
keeps the last request's mapped messages and their JSON, so a request that
begins with the same messages maps and encodes only the new ones. A message's
wire form depends on that message alone, so the body is byte for byte what a
fresh mapping would send; nothing kept is changed in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oma_host.core.messages import LLMMessage, shared_prefix

# One message in the wire's form: the wire messages (or items) it becomes.
Convert = Callable[[LLMMessage, int], list[dict[str, Any]]]
# One wire message's JSON, encoded as the request body is.
Encode = Callable[[dict[str, Any]], bytes]


class WireMessages(list[dict[str, Any]]):
    """The wire messages :meth:`WirePrefix.render` returns: a plain list to
    the adapter, which also knows the JSON of the kept messages it holds
    (from ``offset`` on: a system message put first moves them)."""

    __slots__ = ("_generation", "_kept", "_offset", "_prefix")

    def __init__(
        self,
        wire: list[dict[str, Any]],
        prefix: WirePrefix,
        kept: list[dict[str, Any]],
        offset: int = 0,
    ) -> None:
        super().__init__(wire)
        self._prefix = prefix
        self._generation = prefix.generation
        self._kept = kept
        self._offset = offset

    def prepended(self, first: dict[str, Any]) -> WireMessages:
        """These messages after ``first`` (OpenAI's system message)."""
        return WireMessages([first, *self], self._prefix, self._kept, self._offset + 1)

    def json_items(self, encode: Encode) -> list[bytes]:
        """Each message's JSON, to join as a JSON array's items: a kept
        message still in place as encoded before (what is encoded now of
        them is kept for the next request), any other encoded afresh.
        Messages rendered before the prefix's latest are all encoded."""
        if self._generation != self._prefix.generation:
            return [encode(message) for message in self]
        kept, offset, known = self._kept, self._offset, self._prefix.kept_json
        count = self._kept_in_place()
        if len(known) < count:
            known += [encode(message) for message in kept[len(known) : count]]
        items = [encode(message) for message in self[:offset]]
        items += known if count == len(known) else known[:count]
        items += [encode(message) for message in self[offset + count :]]
        return items

    def _kept_in_place(self) -> int:
        """How many of the kept messages, from the first, are still where
        they were put. Lists compare in C; a message equal to the kept one
        (rather than the same object) has the same JSON, since an adapter
        builds every wire message of a kind with its keys in one order. The
        usual change is one: the last message replaced by a marked copy."""
        kept, offset = self._kept, self._offset
        count, end = len(kept), offset + len(kept)
        if end <= len(self):
            if self[offset:end] == kept:
                return count
            if count and self[offset : end - 1] == kept[:-1]:
                return count - 1
        at = 0
        while at < count and offset + at < len(self) and self[offset + at] is kept[at]:
            at += 1
        return at


class WirePrefix:
    """The wire form of the conversation an adapter sent last."""

    def __init__(self) -> None:
        self._sources: list[LLMMessage] = []
        self._ends: list[int] = []  # where each source message's wire form ends
        self._wire: list[dict[str, Any]] = []
        # The JSON of the first wire messages, each once encoded, and which
        # rendering it belongs to (a render begins the next).
        self.kept_json: list[bytes] = []
        self.generation = 0

    def render(self, messages: list[LLMMessage], convert: Convert) -> WireMessages:
        """The wire form of ``messages``: the kept one for the messages they
        share with the last conversation, ``convert`` for the rest."""
        shared = shared_prefix(self._sources, messages)
        ends = self._ends[:shared]
        kept = ends[-1] if ends else 0
        wire = self._wire[:kept]
        for index in range(shared, len(messages)):
            wire.extend(convert(messages[index], index))
            ends.append(len(wire))
        self._sources, self._ends, self._wire = list(messages), ends, wire
        if kept < len(self.kept_json):
            self.kept_json = self.kept_json[:kept]
        self.generation += 1
        return WireMessages(wire, self, wire)
