"""An agent's persistent history (:class:`Conversation`) and the changes a door's store sees.

A completed prompt turn appends its messages, and a compaction or a rewind
replaces the history; each reaches the door's store through the agent's
:data:`TurnSink` before the agent's own history changes. Beside each message
the history keeps a mark: the checkpoint of the workspace recorded before the
turn it starts (None for every other message), never sent to a provider.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from oma_host.core.compaction import compacted_history
from oma_host.core.errors import InvalidParamsError, StoreError
from oma_host.core.events import Compaction
from oma_host.core.guard import clone_messages
from oma_host.core.messages import LLMMessage
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import AgentRunResult, TokenUsage, failed_result
from oma_host.core.run_ids import new_run_id

if TYPE_CHECKING:
    from oma_host.core.backends import Compactable, FilesRestored
    from oma_host.core.cost import Prices


@dataclass(frozen=True)
class HistoryChange:
    """What a completed prompt turn, or a compaction on request, changes in
    the history: ``appended``, the turn's messages (the caller's turn first)
    to add after the stored ones; or, when a compaction replaced the history,
    ``history``, all of it (the turn's messages included), to store instead
    of what is stored. ``turn`` is the caller's turn (None for a compaction
    on request or a rewind). ``marks``: the checkpoint beside each message
    of ``history`` (or of ``appended``), None for most; empty: none at all."""

    turn: LLMMessage | None
    appended: list[LLMMessage]
    history: list[LLMMessage] | None = None
    marks: list[str | None] = field(default_factory=list)


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


@dataclass(frozen=True)
class Rewound:
    """What a rewind did: the turns kept and cut, the messages the history
    holds now, and what restoring the workspace did (None: not asked)."""

    kept_turns: int
    removed_turns: int
    messages: int
    files: FilesRestored | None

    def wire(self) -> dict[str, Any]:
        """The answer of ``agent/rewind`` and ``_oma/session/rewind``."""
        answer: dict[str, Any] = {
            "keptTurns": self.kept_turns,
            "removedTurns": self.removed_turns,
            "messages": self.messages,
        }
        if self.files is not None:
            answer["files"] = {
                "restored": self.files.restored,
                "removed": self.files.removed,
                "leftAlone": self.files.left_alone,
                "notRecorded": self.files.not_recorded,
            }
        return answer


# Puts the workspace back as a checkpoint recorded it.
Restore = Callable[[str], Awaitable["FilesRestored"]]


def turn_starts(messages: list[LLMMessage]) -> list[int]:
    """Where each turn of ``messages`` starts: the index of each user
    message that is not a tool call's result (a compaction's summary, which
    stands first, counts as one)."""
    return [
        index
        for index, message in enumerate(messages)
        if message["role"] == "user"
        and not any(block.get("type") == "tool_result" for block in message["content"])
    ]


def _marks_after_compaction(
    before: list[LLMMessage], marks: list[str | None], history: list[LLMMessage]
) -> list[str | None]:
    """The marks of ``history``, the compaction of ``before`` (marked
    ``marks``): the messages it kept at the end keep theirs, and so does the
    one the summary was put in front of; a message of the summary alone has none."""
    kept = 0
    while (
        kept < min(len(history), len(before))
        and history[len(history) - 1 - kept] == before[len(before) - 1 - kept]
    ):
        kept += 1
    tail = marks[len(marks) - kept :] if kept else []
    front: list[str | None] = [None] * (len(history) - kept)
    if front and kept < len(before):
        first, replaced = history[len(history) - kept - 1], before[len(before) - kept - 1]
        if first["content"][1:] == replaced["content"]:  # the summary went in front of it
            front[-1] = marks[len(before) - kept - 1]
    return [*front, *tail]


class Conversation:
    """An agent's persistent history and the checkpoint marks beside it
    (:attr:`marks`, as long as :attr:`messages`). The prompts (and
    compactions on request, and rewinds) that change it take their turns one
    at a time (:attr:`lock`); a reset starts a new generation, so that a turn
    still running when it came is not kept."""

    def __init__(
        self,
        history: list[LLMMessage],
        on_turn: TurnSink | None,
        marks: list[str | None] | None = None,
    ) -> None:
        self.messages = history
        given = list(marks or [])[: len(history)]
        self.marks: list[str | None] = given + [None] * (len(history) - len(given))
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
        self.marks = []
        self.generation += 1

    async def save(self, change: HistoryChange) -> None:
        """Persist ``change`` through the agent's TurnSink, if it has one."""
        if self._on_turn is not None:
            saved = self._on_turn(change)
            if inspect.isawaitable(saved):
                await saved

    async def keep(
        self,
        turn: LLMMessage,
        result: AgentRunResult,
        recorder: RunRecorder,
        generation: int,
        checkpoint: str | None = None,
    ) -> AgentRunResult:
        """Keep a turn that ran in ``generation``: when it succeeded and no
        reset came meanwhile, the caller's ``turn`` (as sent, not as a
        beforeRun hook rewrote it, marked with the ``checkpoint`` recorded
        before it) and the reply are saved, then appended, or the history the
        run's compaction made replaces this one. The turn's result, or a
        failed one when saving failed (not kept anywhere, so not kept at all)."""
        if not result["success"] or generation != self.generation:
            return result
        completed = [turn, *clone_messages(result["messages"])]
        added: list[str | None] = [checkpoint, *([None] * (len(completed) - 1))]
        history = None
        marks = added
        if recorder.compaction is not None:
            whole = [*self.messages, *completed]
            history = compacted_history(whole, recorder.compaction, len(recorder.messages))
            marks = _marks_after_compaction(whole, [*self.marks, *added], history)
        try:
            await self.save(HistoryChange(turn, completed, history, marks))
        except Exception as error:
            message = f"the turn could not be saved: {error}"
            return failed_result(result["identity"]["runId"], "store", message)
        if history is None:
            self.messages.extend(completed)
            self.marks.extend(added)
        else:
            self.messages, self.marks = history, marks
        return result

    async def rewind(self, keep_turns: int, restore: Restore | None) -> Rewound:
        """Cut the history back to its first ``keep_turns`` turns, after the
        prompts in flight or queued, and store it so; with ``restore``, the
        workspace is first put back as the checkpoint of the first turn cut
        recorded it. InvalidParams (nothing changed) for a ``keep_turns``
        that cuts no turn, or a turn cut with no checkpoint to restore;
        StoreError when the cut history cannot be stored."""
        async with self.lock:
            starts = turn_starts(self.messages)
            if keep_turns < 0 or keep_turns >= len(starts):
                held = f"the history holds {len(starts)} turn(s)"
                if keep_turns < 0:
                    problem = f"keepTurns: {keep_turns} is negative; {held}"
                else:
                    cut = "" if not starts else f"; keep 0 to {len(starts) - 1} of them"
                    problem = f"keepTurns: {keep_turns} cuts no turn: {held}{cut}"
                raise InvalidParamsError(problem)
            cut_at = starts[keep_turns]
            files = None
            if restore is not None:
                checkpoint = self.marks[cut_at]
                if checkpoint is None:
                    raise InvalidParamsError(
                        f"restoreFiles: turn {keep_turns + 1} has no checkpoint of the workspace "
                        "(its agent had no tool that changes files, or checkpoints were off); "
                        "rewind without restoreFiles to cut the conversation only"
                    )
                files = await restore(checkpoint)
            history, marks = self.messages[:cut_at], self.marks[:cut_at]
            try:
                await self.save(HistoryChange(None, [], history, marks))
            except Exception as error:
                raise StoreError(f"the rewound history could not be saved: {error}") from None
            self.messages, self.marks = history, marks
            return Rewound(keep_turns, len(starts) - keep_turns, len(history), files)

    async def compact(
        self, backend: Compactable, *, secrets: Redactor, prices: Prices | None
    ) -> CompactOutcome:
        """:func:`compact_on_request` in its turn, after the prompts in
        flight or queued, and the history it made kept."""
        async with self.lock:
            generation = self.generation
            before = self.messages

            async def save(change: HistoryChange) -> None:
                history = change.history or []
                marks = _marks_after_compaction(before, self.marks, history)
                await self.save(HistoryChange(None, [], history, marks))

            outcome, history = await compact_on_request(
                backend,
                self.messages,
                secrets=secrets,
                prices=prices,
                save=save,
                current=lambda: generation == self.generation,
            )
            if history is not None:
                self.marks = _marks_after_compaction(before, self.marks, history)
                self.messages = history
            return outcome
