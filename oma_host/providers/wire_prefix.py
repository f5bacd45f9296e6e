"""A conversation's wire form, reused from one request to the next.

An LLM agent sends its whole conversation with every request. Mapping each
message to the provider's form again every time made a turn cost more as
the history grew, where only its new messages are new. So each adapter keeps
a :class:`WirePrefix`: the messages it mapped for its last request and their
wire form. A request that begins with the same messages (the same objects,
or equal ones: :func:`oma_host.core.messages.shared_prefix`) maps only the
rest; the conversation's JSON is then encoded whole, as any client's is.

A message's wire form depends on that message alone (and its index, which
only an error's path names), so the reuse changes nothing that is sent. The
list :meth:`WirePrefix.render` returns is the caller's: an adapter that
marks the last message (a cache breakpoint) replaces that message with a
marked copy rather than changing the one kept here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from oma_host.core.messages import LLMMessage, shared_prefix

# One message in the wire's form: the wire messages (or items) it becomes.
Convert = Callable[[LLMMessage, int], list[dict[str, Any]]]


class WirePrefix:
    """The wire form of the conversation an adapter sent last."""

    def __init__(self) -> None:
        self._sources: list[LLMMessage] = []
        self._ends: list[int] = []  # where each source message's wire form ends
        self._wire: list[dict[str, Any]] = []

    def render(self, messages: list[LLMMessage], convert: Convert) -> list[dict[str, Any]]:
        """The wire form of ``messages``: the kept one for the messages they
        share with the last conversation, ``convert`` for the rest."""
        shared = shared_prefix(self._sources, messages)
        ends = self._ends[:shared]
        wire = self._wire[: ends[-1] if ends else 0]
        for index in range(shared, len(messages)):
            wire.extend(convert(messages[index], index))
            ends.append(len(wire))
        self._sources, self._ends, self._wire = list(messages), ends, wire
        return list(wire)
