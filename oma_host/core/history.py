"""What changes an agent's history, as the stores behind the doors see it:
a completed prompt turn appends its messages, a compaction replaces the
history (:mod:`oma_host.core.compaction`); both reach a door's store
through the agent's :data:`TurnSink` before the agent's own history
changes. And what a compaction on request (:meth:`Agent.compact
<oma_host.core.agent.Agent.compact>`) answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from oma_host.core.events import Compaction
from oma_host.core.messages import LLMMessage
from oma_host.core.results import TokenUsage


@dataclass(frozen=True)
class HistoryChange:
    """What a completed prompt turn, or a compaction on request, changes in
    the history: ``appended``, the turn's messages (the caller's turn first)
    to add after the stored ones; or, when a compaction replaced the history,
    ``history``, all of it (the turn's messages included), to store instead
    of what is stored. ``turn`` is the caller's turn (None for a compaction
    on request)."""

    turn: LLMMessage | None
    appended: list[LLMMessage]
    history: list[LLMMessage] | None = None


# Persists a history change before the history changes; if it raises, the
# turn fails (the compaction is not made) and the history stays as it was.
TurnSink = Callable[[HistoryChange], Awaitable[None] | None]


@dataclass(frozen=True)
class CompactOutcome:
    """What :meth:`Agent.compact` did: the compaction's payload (None when
    there was nothing to compact, and ``reason`` says why), and what the
    summary cost (its tokens, and USD when the agent's prices are known)."""

    compaction: Compaction | None
    reason: str | None
    usage: TokenUsage
    cost: float | None
