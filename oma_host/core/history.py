"""An agent's persistent history (:class:`Conversation`) and the changes a door's store sees.

A completed prompt turn appends its messages and a compaction replaces the
history; both reach the door's store through the agent's :data:`TurnSink`
before the agent's own history changes.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from oma_host.core.compaction import compacted_history
from oma_host.core.errors import StoreError
from oma_host.core.events import Compaction
from oma_host.core.guard import clone_messages
from oma_host.core.messages import LLMMessage
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult, TokenUsage, failed_result
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


class Conversation:
    """An agent's persistent history. The prompts (and compactions on
    request) that change it take their turns one at a time (:attr:`lock`);
    a reset starts a new generation, so that a turn still running when it
    came is not kept."""

    def __init__(self, history: list[LLMMessage], on_turn: TurnSink | None) -> None:
        self.messages = history
        self.generation = 0  # bumped by reset()
        self._on_turn = on_turn
        self._lock: asyncio.Lock | None = None

    @property
    def lock(self) -> asyncio.Lock:
        """Held by the turn running; made on first use, inside the event loop."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def reset(self) -> None:
        self.messages = []
        self.generation += 1

    async def save(self, change: HistoryChange) -> None:
        """Persist ``change`` through the agent's TurnSink, if it has one."""
        if self._on_turn is not None:
            saved = self._on_turn(change)
            if inspect.isawaitable(saved):
                await saved

    async def keep(
        self, turn: LLMMessage, result: AgentRunResult, recorder: RunRecorder, generation: int
    ) -> AgentRunResult:
        """Keep a turn that ran in ``generation``: when it succeeded and no
        reset came meanwhile, the caller's ``turn`` (as sent, not as a
        beforeRun hook rewrote it) and the reply are saved, then appended, or
        the history the run's compaction made replaces this one. The turn's
        result, or a failed one when saving failed (not kept anywhere, so not
        kept at all)."""
        if not result["success"] or generation != self.generation:
            return result
        completed = [turn, *clone_messages(result["messages"])]
        history = None
        if recorder.compaction is not None:
            whole = [*self.messages, *completed]
            history = compacted_history(whole, recorder.compaction, len(recorder.messages))
        try:
            await self.save(HistoryChange(turn, completed, history))
        except Exception as error:
            message = f"the turn could not be saved: {error}"
            return failed_result(result["identity"]["runId"], "store", message)
        if history is None:
            self.messages.extend(completed)
        else:
            self.messages = history
        return result

    async def compact(
        self, backend: Compactable, *, secrets: Redactor, prices: Prices | None
    ) -> CompactOutcome:
        """:func:`compact_on_request` in its turn, after the prompts in
        flight or queued, and the history it made kept."""
        async with self.lock:
            generation = self.generation
            outcome, history = await compact_on_request(
                backend,
                self.messages,
                secrets=secrets,
                prices=prices,
                save=self.save,
                current=lambda: generation == self.generation,
            )
            if history is not None:
                self.messages = history
            return outcome
