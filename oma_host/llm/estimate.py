"""How many tokens a request to an LLM provider holds, estimated before it is sent.

Characters over the provider's characters per token, images at a fixed cost,
corrected by the usage the provider reports, within :data:`SCALE_BOUNDS` so a
bad count cannot make it absurd. Each message's estimate is kept, so a
conversation sent again with a new turn costs only the new messages to measure.
"""

from __future__ import annotations

import json
from itertools import accumulate
from typing import Any

from oma_host.core.messages import ContentBlock, LLMMessage, shared_prefix
from oma_host.core.provider_facts import ProviderFacts
from oma_host.core.results import TokenUsage
from oma_host.providers.base import ChatOptions

# The wire's structure around a message and a block (role, type, brackets).
MESSAGE_TOKENS = 4
BLOCK_TOKENS = 3
# How far the provider's counts may move the estimate either way.
SCALE_BOUNDS = (0.25, 4.0)


def reported_input(usage: TokenUsage) -> int:
    """The input tokens a reply's usage reports, cached ones included."""
    return (
        usage["input_tokens"]
        + usage.get("cache_creation_input_tokens", 0)
        + usage.get("cache_read_input_tokens", 0)
    )


class TokenEstimator:
    """One agent's estimates; see the module docstring."""

    def __init__(self, facts: ProviderFacts | None) -> None:
        self.chars_per_token = facts.chars_per_token if facts is not None else 4.0
        self.image_tokens = facts.image_tokens if facts is not None else 1_000
        self.scale = 1.0
        self._sources: list[LLMMessage] = []
        self._totals: list[int] = []  # raw tokens of the messages up to each one
        self._fixed: tuple[ChatOptions, int] | None = None
        self._last_raw = 0  # the raw estimate of the request measured last

    # -- raw counts (before the provider's correction) ------------------------

    def _chars(self, text: str) -> int:
        return round(len(text) / self.chars_per_token)

    def part_tokens(self, part: Any) -> int:
        """One block or tool-result part: text by its characters, media by the
        fixed count, anything else by its JSON."""
        if not isinstance(part, dict):
            return self._chars(str(part))
        kind = part.get("type")
        if kind == "text":
            return self._chars(str(part.get("text", "")))
        if kind in ("image", "file"):
            return self.image_tokens
        if kind == "tool_use":
            return self._chars(str(part.get("name", ""))) + self._chars(
                json.dumps(part.get("input"), separators=(",", ":"))
            )
        if kind == "tool_result":
            content = part.get("content")
            if isinstance(content, list):
                return sum(self.part_tokens(item) + BLOCK_TOKENS for item in content)
            return self._chars(str(content))
        if kind == "reasoning":
            return self._chars(str(part.get("text", ""))) + self._chars(
                str(part.get("redactedData", ""))
            )
        return self._chars(json.dumps(part, separators=(",", ":")))

    def message_tokens(self, message: LLMMessage) -> int:
        blocks: list[ContentBlock] = message["content"]
        return MESSAGE_TOKENS + sum(self.part_tokens(block) + BLOCK_TOKENS for block in blocks)

    def _fixed_tokens(self, options: ChatOptions) -> int:
        """The system prompt and the tool declarations, kept per options object."""
        if self._fixed is not None and self._fixed[0] is options:
            return self._fixed[1]
        tokens = self._chars(options.system_prompt or "")
        for tool in options.tools:
            declared = json.dumps(tool.input_schema, separators=(",", ":"))
            tokens += MESSAGE_TOKENS + self._chars(tool.name + tool.description + declared)
        self._fixed = (options, tokens)
        return tokens

    def _raw_totals(self, conversation: list[LLMMessage]) -> list[int]:
        """The running raw totals of ``conversation``, reusing those of the
        messages it shares with the conversation measured last."""
        shared = shared_prefix(self._sources, conversation)
        totals = self._totals[:shared]
        running = totals[-1] if totals else 0
        for message in conversation[shared:]:
            running += self.message_tokens(message)
            totals.append(running)
        self._sources = list(conversation)
        self._totals = totals
        return totals

    # -- scaled estimates -----------------------------------------------------

    def scaled(self, raw: int) -> int:
        return round(raw * self.scale)

    def measure(self, conversation: list[LLMMessage], options: ChatOptions) -> int:
        """The estimated tokens of a request sending ``conversation`` with
        ``options``; remembered for :meth:`observe`."""
        totals = self._raw_totals(conversation)
        self._last_raw = self._fixed_tokens(options) + (totals[-1] if totals else 0)
        return self.scaled(self._last_raw)

    def fixed(self, options: ChatOptions) -> int:
        """The estimated tokens of the system prompt and tools alone."""
        return self.scaled(self._fixed_tokens(options))

    def sizes(self, conversation: list[LLMMessage]) -> list[int]:
        """Each message's estimated tokens."""
        totals = self._raw_totals(conversation)
        befores = [0, *totals][: len(totals)]  # none for an empty conversation
        return [self.scaled(total - before) for total, before in zip(totals, befores, strict=True)]

    def tokens(self, parts: list[Any]) -> int:
        """The estimated tokens of blocks or parts, outside any conversation."""
        return self.scaled(sum(self.part_tokens(part) + BLOCK_TOKENS for part in parts))

    @property
    def last(self) -> int:
        """The estimate of the request measured last."""
        return self.scaled(self._last_raw)

    # -- the provider's correction --------------------------------------------

    def observe(self, usage: TokenUsage) -> None:
        """Scale later estimates by what the provider counted for the request
        measured last, over what was estimated for it."""
        counted = reported_input(usage)
        if counted > 0 and self._last_raw > 0:
            low, high = SCALE_BOUNDS
            self.scale = min(high, max(low, counted / self._last_raw))

    def at_least(self, tokens: int) -> None:
        """The provider refused the request measured last as longer than
        ``tokens``: scale the estimates so that it would have been."""
        if self._last_raw > 0 and self.scaled(self._last_raw) <= tokens:
            self.scale = min(SCALE_BOUNDS[1], tokens / self._last_raw * 1.05)


def running_sums(sizes: list[int]) -> list[int]:
    """``tail[i]``: the tokens of ``sizes[i:]`` (one more entry, 0, at the end)."""
    return [*reversed(list(accumulate(reversed(sizes), initial=0)))]
