"""What the host knows of each provider's models: the context window, the
prices (US dollars per million tokens: input, output, and the cache's
writes and reads as each vendor prices them) and whether the model can
reason (``thinking``). Each provider's descriptor
(:mod:`oma_host.core.provider_facts`) holds its table; an agent's
``contextWindow`` and ``pricing`` override what is here.

A model is found by the longest id in its provider's table that its name
starts with, once a Bedrock inference profile's region (``us.``, ``eu.``,
...) and vendor (``anthropic.``) are taken off, so dated versions
(``claude-sonnet-4-5-20250929``) and Bedrock ids
(``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) find their model.

The prices are the vendors' list prices for standard (not batch) requests
on the date below, the lowest tier where a price depends on the prompt's
length; they change, which is what ``AgentConfig.pricing`` is for.
"""

from __future__ import annotations

from dataclasses import dataclass

PRICES_AS_OF = "2025-11"
_BEDROCK_VENDORS = ("anthropic.", "amazon.", "meta.", "mistral.", "cohere.", "ai21.")
_BEDROCK_REGIONS = ("us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca.")


@dataclass(frozen=True)
class ModelFacts:
    """One model's context window and prices (USD per million tokens; a
    cache price of None: the input price); None where nobody has said."""

    id: str
    context_window: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cache_write_price: float | None = None
    cache_read_price: float | None = None
    reasoning: bool = False

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None


@dataclass(frozen=True)
class ModelTable:
    """A provider's known models and where their facts come from."""

    source: str | None = None
    models: tuple[ModelFacts, ...] = ()

    def find(self, model: str) -> ModelFacts | None:
        """The facts of ``model`` (see the module docstring), or None."""
        name = model.lower()
        for prefix in _BEDROCK_REGIONS:
            name = name.removeprefix(prefix)
        for vendor in _BEDROCK_VENDORS:
            name = name.removeprefix(vendor)
        found = [facts for facts in self.models if name.startswith(facts.id)]
        return max(found, key=lambda facts: len(facts.id), default=None)


Prices = tuple[float, float, float, float]


def _model(model_id: str, window: int, prices: Prices, *, reasoning: bool) -> ModelFacts:
    """A model with its (input, output, cache write, cache read) prices."""
    input_price, output_price, cache_write, cache_read = prices
    return ModelFacts(
        model_id, window, input_price, output_price, cache_write, cache_read, reasoning
    )


def _claude(input_price: float, output_price: float) -> Prices:
    # Anthropic: a 5-minute cache write costs 1.25x the input price, a read 0.1x.
    return (
        input_price,
        output_price,
        round(input_price * 1.25, 6),
        round(input_price * 0.1, 6),
    )


def _cached(input_price: float, output_price: float, read: float) -> Prices:
    # OpenAI and Gemini cache by themselves: no write price, reads at their own.
    return (input_price, output_price, input_price, read)


CLAUDE_MODELS = ModelTable(
    source="https://docs.anthropic.com/en/docs/about-claude/models",
    models=(
        _model("claude-opus-4-5", 200_000, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-1", 200_000, _claude(15.0, 75.0), reasoning=True),
        _model("claude-opus-4", 200_000, _claude(15.0, 75.0), reasoning=True),
        _model("claude-sonnet-4-5", 200_000, _claude(3.0, 15.0), reasoning=True),
        _model("claude-sonnet-4", 200_000, _claude(3.0, 15.0), reasoning=True),
        _model("claude-haiku-4-5", 200_000, _claude(1.0, 5.0), reasoning=True),
        _model("claude-3-7-sonnet", 200_000, _claude(3.0, 15.0), reasoning=True),
        _model("claude-3-5-sonnet", 200_000, _claude(3.0, 15.0), reasoning=False),
        _model("claude-3-5-haiku", 200_000, _claude(0.8, 4.0), reasoning=False),
        _model("claude-3-haiku", 200_000, _claude(0.25, 1.25), reasoning=False),
    ),
)

OPENAI_MODELS = ModelTable(
    source="https://platform.openai.com/docs/pricing",
    models=(
        _model("gpt-5", 400_000, _cached(1.25, 10.0, 0.125), reasoning=True),
        _model("gpt-5-mini", 400_000, _cached(0.25, 2.0, 0.025), reasoning=True),
        _model("gpt-5-nano", 400_000, _cached(0.05, 0.4, 0.005), reasoning=True),
        _model("gpt-4.1", 1_047_576, _cached(2.0, 8.0, 0.5), reasoning=False),
        _model("gpt-4.1-mini", 1_047_576, _cached(0.4, 1.6, 0.1), reasoning=False),
        _model("gpt-4.1-nano", 1_047_576, _cached(0.1, 0.4, 0.025), reasoning=False),
        _model("gpt-4o", 128_000, _cached(2.5, 10.0, 1.25), reasoning=False),
        _model("gpt-4o-mini", 128_000, _cached(0.15, 0.6, 0.075), reasoning=False),
        _model("o3", 200_000, _cached(2.0, 8.0, 0.5), reasoning=True),
        _model("o3-mini", 200_000, _cached(1.1, 4.4, 0.55), reasoning=True),
        _model("o4-mini", 200_000, _cached(1.1, 4.4, 0.275), reasoning=True),
    ),
)

_GEMINI_WINDOW = 1_048_576
GEMINI_MODELS = ModelTable(
    source="https://ai.google.dev/gemini-api/docs/pricing",
    models=(
        _model("gemini-2.5-pro", _GEMINI_WINDOW, _cached(1.25, 10.0, 0.125), reasoning=True),
        _model("gemini-2.5-flash", _GEMINI_WINDOW, _cached(0.3, 2.5, 0.03), reasoning=True),
        _model("gemini-2.5-flash-lite", _GEMINI_WINDOW, _cached(0.1, 0.4, 0.01), reasoning=True),
        _model("gemini-2.0-flash", _GEMINI_WINDOW, _cached(0.1, 0.4, 0.025), reasoning=False),
        _model(
            "gemini-2.0-flash-lite", _GEMINI_WINDOW, _cached(0.075, 0.3, 0.075), reasoning=False
        ),
    ),
)

# Bedrock serves the Claude models at Anthropic's prices, under its own ids.
BEDROCK_MODELS = ModelTable(
    source="https://aws.amazon.com/bedrock/pricing/", models=CLAUDE_MODELS.models
)
# Azure deployments are named by their owners: a deployment named as its
# model (``gpt-4o``) is found, any other name is not.
AZURE_MODELS = ModelTable(
    source="https://azure.microsoft.com/pricing/details/cognitive-services/openai-service/",
    models=OPENAI_MODELS.models,
)
