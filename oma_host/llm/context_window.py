"""An LLM agent's conversation kept within its model's context window.

Before each request the loop calls :meth:`ContextKeeper.fit`, which compacts
when the estimate passes ``compactAt`` of the input budget; a provider's "too
long" answer brings one compaction and a retry (:meth:`ContextKeeper.recover`).
The conversation is only cut where a turn or an answer starts, so a tool call
and its result are never parted. docs/providers.md, "Context windows and
compaction".
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid

from oma_host.core.abort import Aborted
from oma_host.core.compaction import CompactionMark, with_summary
from oma_host.core.config import AgentConfig, ContextConfig
from oma_host.core.cost import Prices, context_window_of
from oma_host.core.events import (
    Compaction,
    CompactionFailed,
    CompactionStarted,
    CompactionStrategy,
    CompactionTrigger,
)
from oma_host.core.messages import ContentBlock, LLMMessage, TextBlock
from oma_host.core.provider_facts import DEFAULT_PROVIDER, provider_facts
from oma_host.core.recorder import RunRecorder
from oma_host.core.redact import Redactor
from oma_host.core.results import TokenUsage
from oma_host.llm.chat_span import chat_span, compaction_span, record_compaction, record_reply
from oma_host.llm.estimate import TokenEstimator, running_sums
from oma_host.llm.transcript import (
    BLOCK_CHARS,
    Transcript,
    cut,
    dropped_turns,
    is_turn_start,
    media_name,
    transcript,
)
from oma_host.providers.base import ChatOptions, LLMAdapter, ProviderError

# The room kept for the reply when the agent sets no maxTokens (the
# Anthropic adapter's own default), and the most of the window it may take.
REPLY_RESERVE_TOKENS = 4_096
# The share of the threshold the kept turns may fill when keepTurns is unset.
TAIL_SHARE = 0.5
# The longest summary asked for, and the least (small windows ask for less).
SUMMARY_TOKENS = 2_048
MIN_SUMMARY_TOKENS = 128
# The transcript one summary request carries when no window is known.
UNKNOWN_WINDOW_CHUNK = 100_000

SUMMARY_INSTRUCTION = (
    "You are summarising the earlier part of a conversation between a user and an AI "
    "assistant that uses tools. It is being compacted to fit the model's context window, "
    "and the assistant will continue from your summary alone. Write, in the "
    "conversation's language: what the user asked for; what was decided; what was done "
    "and changed (files, commands, their results, with the names, paths and values that "
    "matter); what was found out; and what remains to be done. Describe each image "
    "briefly. Be concise and complete; plain text, no preamble."
)
SUMMARY_ASK = "Summarise the conversation above as instructed."

# What a compaction makes: the new conversation, its summary, how many
# messages at the end were kept, and the event's payload.
Outcome = tuple[list[LLMMessage], TextBlock | None, int, Compaction]


def reply_reserve(window: int, max_tokens: int | None) -> int:
    """The window's room kept for the reply: ``maxTokens`` when set (at
    most half the window), else :data:`REPLY_RESERVE_TOKENS` (at most a
    quarter)."""
    if max_tokens is not None:
        return min(max_tokens, window // 2)
    return min(REPLY_RESERVE_TOKENS, window // 4)


def _text(text: str) -> ContentBlock:
    return {"type": "text", "text": text}


def summary_block(summary: str, compacted: int, seen: Transcript) -> TextBlock:
    """The text block standing for the first ``compacted`` messages."""
    parts = [
        f"[Summary of the earlier conversation: its first {compacted} messages were compacted "
        "into this summary to keep the conversation within the model's context window.]",
        summary,
    ]
    if seen.media:
        names = "; ".join(media_name(entry) for entry in seen.media)
        parts.append(f"[Not kept with them: {names}.]")
    return {"type": "text", "text": "\n\n".join(parts)}


class ContextKeeper:
    """One LLM agent's context window; see the module docstring."""

    def __init__(
        self, config: AgentConfig, adapter: LLMAdapter, prices: Prices | None = None
    ) -> None:
        settings = config.context or ContextConfig()
        self._config = config
        self._redactor = Redactor.for_config(config)
        self._prices = prices  # the agent's model's, which writes the summaries
        self.strategy = settings.strategy
        self._compact_at = settings.compact_at
        self._keep_turns = settings.keep_turns
        self._max_tokens = config.max_tokens
        self._thinking = config.thinking is not None
        self._adapter = adapter
        window = context_window_of(config)
        self._budget = None if window is None else window - reply_reserve(window, config.max_tokens)
        # While compacting after a "too long" answer: the refused request's
        # estimate, which was over the budget however low it was.
        self._ceiling: int | None = None
        self.estimator = TokenEstimator(provider_facts(config.provider or DEFAULT_PROVIDER))

    @property
    def budget(self) -> int | None:
        """The estimated tokens a request may hold (None: no window known)."""
        if self._ceiling is None:
            return self._budget
        return self._ceiling if self._budget is None else min(self._budget, self._ceiling)

    @property
    def threshold(self) -> int | None:
        """The estimated tokens a request may hold before it is compacted."""
        budget = self.budget
        return None if budget is None else int(self._compact_at * budget)

    # -- what the loop calls ---------------------------------------------------

    async def fit(
        self, conversation: list[LLMMessage], options: ChatOptions, recorder: RunRecorder
    ) -> None:
        """Before a request: compact ``conversation`` (in place) when its
        estimate passes the threshold."""
        if self.strategy == "off":
            return
        estimate = self.estimator.measure(conversation, options)
        threshold = self.threshold
        if threshold is not None and estimate > threshold:
            await self._compact_run(conversation, options, recorder, "threshold")

    def observe(self, usage: TokenUsage) -> None:
        """After a reply: its usage corrects the estimates."""
        if self.strategy != "off":
            self.estimator.observe(usage)

    async def recover(
        self,
        error: ProviderError,
        conversation: list[LLMMessage],
        options: ChatOptions,
        recorder: RunRecorder,
    ) -> bool:
        """After a failed request: whether the provider said it was too long
        and a compaction made it shorter, so that it is worth sending again."""
        if error.kind != "context_too_long" or self.strategy == "off":
            return False
        sent = self.estimator.measure(conversation, options)
        ceiling = max(1, int(sent * 0.9))
        if self._budget is None:
            # No window known: what was refused is over it, whatever it is.
            self._budget = ceiling
        else:
            self.estimator.at_least(self._budget)
        self._ceiling = ceiling
        try:
            return await self._compact_run(conversation, options, recorder, "too_long")
        finally:
            self._ceiling = None

    async def compact_now(
        self, messages: list[LLMMessage], options: ChatOptions, recorder: RunRecorder
    ) -> Compaction | str:
        """Compact an agent's history on request: the payload (the change in
        ``recorder.compaction``), or why there was nothing to compact."""
        with compaction_span("request") as span:
            outcome = await self._compact(messages, options, recorder, "request")
            if isinstance(outcome, str):
                return outcome
            compacted, summary, kept, payload = outcome
            recorder.compaction = CompactionMark(summary, kept)
            payload["tokensAfter"] = self.estimator.measure(compacted, options)
            record_compaction(span, payload)
            return payload

    # -- compacting ------------------------------------------------------------

    async def _compact_run(
        self,
        conversation: list[LLMMessage],
        options: ChatOptions,
        recorder: RunRecorder,
        trigger: CompactionTrigger,
    ) -> bool:
        with compaction_span(trigger) as span:
            outcome = await self._compact(conversation, options, recorder, trigger, announce=True)
            if isinstance(outcome, str):
                return False
            compacted, summary, kept, payload = outcome
            conversation[:] = compacted
            recorder.compaction = CompactionMark(summary, kept, len(recorder.messages))
            payload["tokensAfter"] = self.estimator.measure(conversation, options)
            record_compaction(span, payload)
            recorder.event({"type": "compaction", "data": payload})
            return True

    async def _compact(
        self,
        messages: list[LLMMessage],
        options: ChatOptions,
        recorder: RunRecorder,
        trigger: CompactionTrigger,
        *,
        announce: bool = False,
    ) -> Outcome | str:
        """The compacted conversation, or why there is nothing to compact.
        With ``announce``, the run's events say when it starts and how it
        ends (``compaction_started``, then ``compaction`` or
        ``compaction_failed``), under one id."""
        if not messages:
            return "nothing to compact: the conversation is empty"
        strategy: CompactionStrategy = (
            "sliding-window" if self.strategy == "sliding-window" else "summarize"
        )
        sizes = self.estimator.sizes(messages)
        fixed = self.estimator.fixed(options)
        split = self._split(messages, sizes, strategy, trigger, fixed)
        if split is None:
            turns = sum(1 for message in messages if is_turn_start(message))
            return (
                f"nothing to compact: the conversation holds {len(messages)} messages in "
                f"{turns} turns, and the last {self._keep_turns or 1} are kept as they are"
            )
        older, tail = messages[:split], messages[split:]
        seen = transcript(older)
        summary: TextBlock | None = None
        written = None
        compaction_id = uuid.uuid4().hex
        if announce:
            started: CompactionStarted = {
                "id": compaction_id,
                "strategy": strategy,
                "trigger": trigger,
            }
            recorder.event({"type": "compaction_started", "data": started})
        if strategy == "summarize":
            try:
                written = await self._summarize(seen, options, recorder)
            except BaseException as error:
                if announce:
                    cancelled = isinstance(error, asyncio.CancelledError | Aborted)
                    why = "cancelled" if cancelled else str(error) or type(error).__name__
                    failed: CompactionFailed = {
                        "id": compaction_id,
                        "trigger": trigger,
                        "error": why,
                        "cancelled": cancelled,
                    }
                    recorder.event({"type": "compaction_failed", "data": failed})
                raise
            summary = summary_block(written, split, seen)
        compacted = with_summary(tail, summary)
        payload: Compaction = {
            "id": compaction_id,
            "strategy": strategy,
            "trigger": trigger,
            "before": len(messages),
            "after": len(compacted),
            "tokensBefore": fixed + sum(sizes),
            "tokensAfter": 0,  # measured by the caller, on what is sent
            "images": seen.media,
        }
        if strategy == "sliding-window":
            payload["dropped"] = dropped_turns(older)
        if written is not None:
            payload["summary"] = written
        return compacted, summary, len(tail), payload

    def _split(
        self,
        messages: list[LLMMessage],
        sizes: list[int],
        strategy: str,
        trigger: CompactionTrigger,
        fixed: int,
    ) -> int | None:
        """The first message kept, or None when there is no place to cut.

        A cut is made where a turn starts; ``summarize`` may also cut where
        the model's answer starts (the summary becomes a user message in
        front of it), which matters when one turn alone is too long. Cuts
        never part a tool call from its result, and keep the last message."""
        starts = [i for i in range(1, len(messages)) if is_turn_start(messages[i])]
        legal = starts
        if strategy == "summarize":
            legal = [
                i
                for i in range(1, len(messages))
                if messages[i]["role"] == "assistant" or is_turn_start(messages[i])
            ]
        if not legal:
            return None
        tails = running_sums(sizes)
        threshold = self.threshold
        room = None if threshold is None else TAIL_SHARE * threshold
        # What the kept turns may hold at most: the threshold, less the rest.
        limit = None if threshold is None else threshold - fixed - self._summary_tokens()
        keep = self._keep_turns or (1 if trigger == "request" else None)
        if keep is not None:
            chosen = starts[-keep] if len(starts) >= keep else None
            if chosen is not None and (limit is None or tails[chosen] <= limit):
                return chosen
            if trigger == "request":
                return None  # no more turns than are kept
        fitting = [i for i in starts if room is None or tails[i] <= room]
        if keep is None and fitting:
            return fitting[0]
        fitting = [i for i in legal if room is None or tails[i] <= room]
        return fitting[0] if fitting else legal[-1]

    def _summary_tokens(self) -> int:
        threshold = self.threshold
        if threshold is None:
            return SUMMARY_TOKENS
        return max(MIN_SUMMARY_TOKENS, min(SUMMARY_TOKENS, threshold // 8))

    def _chunks(self, seen: Transcript) -> list[list[ContentBlock]]:
        """The transcript in pieces that each fit one summary request."""
        budget = self.budget
        if budget is None:
            limit = UNKNOWN_WINDOW_CHUNK
        else:
            # A request holds the instruction, the summary so far, the chunk,
            # and leaves room for the new summary.
            instruction = self.estimator.tokens([_text(SUMMARY_INSTRUCTION + SUMMARY_ASK)])
            limit = max(budget // 2, budget - 2 * self._summary_tokens() - instruction)
        # A message too long for a request alone has its texts cut to fit.
        scale = self.estimator.scale / self.estimator.chars_per_token
        chunks: list[list[ContentBlock]] = []
        current: list[ContentBlock] = []
        used = 0
        for piece in seen.pieces:
            tokens = self.estimator.tokens(piece)
            if tokens > limit:
                texts = max(1, sum(1 for block in piece if block.get("type") == "text"))
                chars = max(200, min(BLOCK_CHARS, int(limit / scale / texts / 2)))
                piece = [
                    _text(cut(str(block["text"]), chars)) if block.get("type") == "text" else block
                    for block in piece
                ]
                tokens = self.estimator.tokens(piece)
            if current and used + tokens > limit:
                chunks.append(current)
                current, used = [], 0
            current.extend(piece)
            used += tokens
        if current:
            chunks.append(current)
        return chunks

    async def _summarize(
        self, seen: Transcript, options: ChatOptions, recorder: RunRecorder
    ) -> str:
        """The agent's model's summary of the transcript, one request per
        chunk, each given the summary so far."""
        asked = dataclasses.replace(
            options,
            system_prompt=SUMMARY_INSTRUCTION,
            tools=(),
            # Thinking needs more room than a summary's (the adapter raises it).
            max_tokens=None if self._thinking else self._summary_tokens(),
            guarded=True,
        )
        summary = ""
        for chunk in self._chunks(seen):
            content: list[ContentBlock] = []
            if summary:
                content.append(
                    _text(f"The summary of the conversation before this part:\n{summary}")
                )
            content.extend(chunk)
            content.append(_text(SUMMARY_ASK))
            request: list[LLMMessage] = [{"role": "user", "content": content}]
            with chat_span(self._config, asked.model) as span:
                response = await self._adapter.chat(request, asked)
                record_reply(span, response, asked.model, self._prices, self._redactor)
            recorder.add_token_usage(response.usage)
            recorder.add_cost(None if self._prices is None else self._prices.cost(response.usage))
            summary = "".join(
                str(block.get("text", ""))
                for block in response.content
                if block.get("type") == "text"
            ).strip()
            if not summary:
                raise ProviderError(
                    f"{self._adapter.name}: the request to summarise the earlier conversation "
                    "(to compact it) was answered with no text",
                    kind="malformed",
                )
        return summary
