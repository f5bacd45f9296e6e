"""What changes an agent's history, as the stores behind the doors see it:
a completed prompt turn appends its messages, a compaction replaces the
history (:mod:`oma_host.core.compaction`); both reach a door's store
through the agent's :data:`TurnSink` before the agent's own history
changes. And a compaction on request (:func:`compact_on_request`, for
:meth:`Agent.compact <oma_host.core.agent.Agent.compact>`) and what it answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from oma_host.core.compaction import compacted_history
from oma_host.core.errors import StoreError
from oma_host.core.events import Compaction
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.core.results import RunRecorder, TokenUsage
from oma_host.core.run_ids import new_run_id

if TYPE_CHECKING:
    from oma_host.core.backends import Compactable
    from oma_host.core.cost import Prices


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


async def compact_on_request(
    backend: Compactable,
    history: list[LLMMessage],
    *,
    secrets: Redactor,
    prices: Prices | None,
    save: Callable[[HistoryChange], Awaitable[None]],
    current: Callable[[], bool],
) -> tuple[CompactOutcome, list[LLMMessage] | None]:
    """Have ``backend`` compact ``history``; what it did, and the history
    to keep (None: nothing changes). The new history is ``save``d first (a
    failure raises StoreError), unless ``current`` says the agent's history
    was reset meanwhile. The payload is given with ``secrets`` taken out."""
    recorder = RunRecorder(new_run_id(), redactor=secrets)
    outcome = await backend.compact(history, recorder)
    usage = recorder.usage
    cost = None if prices is None else prices.cost(usage)
    mark = recorder.compaction
    if isinstance(outcome, str) or mark is None or not current():
        reason = outcome if isinstance(outcome, str) else "the history was reset meanwhile"
        return CompactOutcome(None, reason, usage, cost), None
    compacted = compacted_history(history, mark)
    try:
        await save(HistoryChange(None, [], compacted))
    except Exception as error:
        raise StoreError(f"the compacted history could not be saved: {error}") from None
    payload = cast(Compaction, secrets.redact_tree(outcome))
    return CompactOutcome(payload, None, usage, cost), compacted
