"""What compacting a conversation leaves of it, as both sides apply it: the
LLM backend compacts the conversation it sends (``oma_host/llm/context_window.py``),
and the agent then makes the same change to the history it keeps and stores
(:meth:`oma_host.core.agent.Agent.prompt_turn`, :meth:`~oma_host.core.agent.Agent.compact`).

A compaction keeps the messages at the end of a conversation as they were
(the tail: the last turns, and every tool call with its result) and puts, in
place of the older ones, either one summary text block (``summarize``) or
nothing (``sliding-window``). The summary block goes first in the first
user message: a tail that begins with the user's turn gets it in front of
that turn's own blocks, a tail that begins with the model's answer gets a
user message of its own. Either way the roles still alternate from a user
message, which some providers require (Bedrock's Converse refuses two user
messages in a row).

The change is recorded as a :class:`CompactionMark`: the summary and how
many messages at the conversation's end were kept. Counting from the end is
what lets the agent apply it to its own list, which holds the caller's turn
as it was sent where the backend may have run a beforeRun hook's rewrite.
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
