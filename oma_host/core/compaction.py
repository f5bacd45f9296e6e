"""What compacting a conversation leaves of it, applied alike by the LLM backend and the agent.

The tail (the last turns, each tool call with its result) is kept and the older
messages become one summary block (``summarize``) or nothing
(``sliding-window``), with roles still alternating from a user message as some
providers require. A :class:`CompactionMark` counts the kept messages from the
end, so the agent can apply it to its own history, which may differ from what
the backend sent where a beforeRun hook rewrote the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from oma_host.core.messages import ContentBlock, LLMMessage, TextBlock


@dataclass(frozen=True)
class CompactionMark:
    """One compaction: ``summary`` (None when the older turns were dropped),
    ``kept`` the messages at the end of the conversation it kept, and
    ``run_messages`` how many messages the run had added by then (its
    RunRecorder's), so that those it added later are counted as kept too."""

    summary: TextBlock | None
    kept: int
    run_messages: int = 0

    def kept_now(self, run_messages: int) -> int:
        """The messages at the end kept once the run has added ``run_messages``."""
        return self.kept + run_messages - self.run_messages


def with_summary(tail: list[LLMMessage], summary: TextBlock | None) -> list[LLMMessage]:
    """The compacted conversation: ``summary`` first in the first user
    message, then ``tail`` (see the module docstring). The tail's messages
    are not copied; the one that takes the summary is a new message."""
    if summary is None:
        return list(tail)
    block = cast(ContentBlock, summary)  # the untyped form content lists hold
    if tail and tail[0]["role"] == "user":
        first: LLMMessage = {"role": "user", "content": [block, *tail[0]["content"]]}
        return [first, *tail[1:]]
    return [{"role": "user", "content": [block]}, *tail]


def compacted_history(
    history: list[LLMMessage], mark: CompactionMark, run_messages: int = 0
) -> list[LLMMessage]:
    """``history`` (which ends with the run's own messages, ``run_messages``
    of them) as the compaction ``mark`` left the run's conversation."""
    kept = min(len(history), mark.kept_now(run_messages))
    return with_summary(history[len(history) - kept :], mark.summary)
