"""What a run costs in US dollars, and its model's context window.

From the agent's ``pricing`` and ``contextWindow``, else its provider's model
table (:mod:`oma_host.core.model_facts`); unknown prices give no cost, never a
guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from oma_host.core.provider_facts import model_facts

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig
    from oma_host.core.results import TokenUsage

_PER_TOKEN = 1e-6  # prices are per million tokens


@dataclass(frozen=True)
class Prices:
    """USD per million tokens: the input not read from a cache, the output,
    the input written to the cache and the input read from it."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, usage: TokenUsage) -> float:
        """What ``usage`` costs (reasoning tokens are in the output already)."""
        total = (
            usage["input_tokens"] * self.input
            + usage["output_tokens"] * self.output
            + usage.get("cache_creation_input_tokens", 0) * self.cache_write
            + usage.get("cache_read_input_tokens", 0) * self.cache_read
        )
        return total * _PER_TOKEN


def prices_of(config: AgentConfig, model: str | None = None) -> Prices | None:
    """The agent's prices for ``model`` (default: its own model; another is
    one of its ``fallbackModels``): its ``pricing``, which prices every model
    the agent uses, else the model's in the table; None when neither says
    (an external backend, an unknown model)."""
    if config.backend is not None:
        return None
    if config.pricing is not None:
        given = config.pricing
        return Prices(
            given.input,
            given.output,
            given.input if given.cache_write is None else given.cache_write,
            given.input if given.cache_read is None else given.cache_read,
        )
    facts = model_facts(config.provider, model or config.model)
    if facts is None or facts.input_price is None or facts.output_price is None:
        return None
    return Prices(
        facts.input_price,
        facts.output_price,
        facts.input_price if facts.cache_write_price is None else facts.cache_write_price,
        facts.input_price if facts.cache_read_price is None else facts.cache_read_price,
    )


def context_window_of(config: AgentConfig) -> int | None:
    """The agent's ``contextWindow``, else its model's in the table."""
    if config.context_window is not None:
        return config.context_window
    if config.backend is not None:
        return None
    facts = model_facts(config.provider, config.model)
    return None if facts is None else facts.context_window


def can_reason(config: AgentConfig) -> bool:
    """Whether the agent's model can think: its table says so, or the agent
    sets ``thinking`` itself."""
    if config.backend is not None:
        return False
    if config.thinking is not None:
        return True
    facts = model_facts(config.provider, config.model)
    return facts is not None and facts.reasoning
