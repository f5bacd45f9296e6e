"""The ``messageId`` of a session's chunks: a message's place in the stored history.

An id is the history's epoch and the message's index in it, so a turn's
chunks and their replay by ``session/load`` carry the same ids without the
store keeping any. The epoch is stored with the session's settings and
changes whenever the history is rewritten (a compaction, ``/clear``), so no
id is ever given to two messages of one session.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from oma_host.core.events import Compaction

EPOCH_SETTING = "messageEpoch"


def new_epoch() -> str:
    return uuid.uuid4().hex[:12]


def message_id(epoch: str, index: int) -> str:
    return f"{epoch}-{index}"


class TurnMessages:
    """Which message of the history each chunk of a turn is part of, followed
    from the turn's events: the turn's first reply comes after the user's
    message, each later one after the message of tool results before it; a
    compaction starts a new epoch, the next reply at the end of what it kept."""

    def __init__(self, epoch: str, history_length: Callable[[], int]) -> None:
        self.epoch = epoch
        # Read at the turn's first event: a turn queued behind another starts
        # on the history that turn left.
        self._history_length = history_length
        self._current: int | None = None  # the reply being streamed
        self._next: int | None = None  # where the next reply goes, once known

    def reply_part(self) -> str:
        """The id of the reply a text, thought or tool call is part of."""
        if self._current is None:
            self._current = self._history_length() + 1 if self._next is None else self._next
        return message_id(self.epoch, self._current)

    def tool_result(self) -> None:
        """The reply's tool calls were answered: one message, then the next reply."""
        if self._current is not None:
            self._next = self._current + 2
            self._current = None

    def compacted(self, compaction: Compaction) -> None:
        """The conversation is now ``after`` messages; the next reply ends it."""
        self.epoch = compaction.get("id", new_epoch())[:12]
        self._current = None
        self._next = compaction["after"]
