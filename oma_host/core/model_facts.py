"""What the host knows of each provider's models: context window, prices, whether it reasons.

A model is found by the longest id in its provider's table that its name starts
with, followed by a separator, once a Bedrock profile's region and vendor are
taken off, so dated and Bedrock ids find their model while ``gpt-5.4`` is not
taken for ``gpt-5``. Each table records its sources and the day they were read;
prices change, which is what ``AgentConfig.pricing`` is for.
"""

from __future__ import annotations

from dataclasses import dataclass

_BEDROCK_VENDORS = ("anthropic.", "amazon.", "meta.", "mistral.", "cohere.", "ai21.", "openai.")
_BEDROCK_REGIONS = ("us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca.")


@dataclass(frozen=True)
class ModelFacts:
    """One model's context window and prices (USD per million tokens; a
    cache price of None: the input price); None where nobody has said.
    ``retired``: the vendor's own API no longer serves it (kept for the
    costs of older runs and for platforms that still do; the ``model``
    picker does not offer it)."""

    id: str
    context_window: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cache_write_price: float | None = None
    cache_read_price: float | None = None
    reasoning: bool = False
    retired: bool = False

    @property
    def priced(self) -> bool:
        return self.input_price is not None and self.output_price is not None


def _separated(name: str, model_id: str) -> bool:
    """Whether ``name`` is ``model_id`` or starts with it and a separator."""
    if not name.startswith(model_id):
        return False
    rest = name[len(model_id) : len(model_id) + 1]
    return not rest or not (rest.isalnum() or rest == ".")


@dataclass(frozen=True)
class ModelTable:
    """A provider's known models, where their facts come from and when
    those pages were read. ``names_models``: the ids are names the
    provider's API takes as they are (not so for Bedrock, whose ids and
    inference profiles differ by region, nor Azure, whose deployments are
    named by their owners), so the ``model`` picker can offer them."""

    sources: tuple[str, ...] = ()
    read_on: str | None = None
    models: tuple[ModelFacts, ...] = ()
    names_models: bool = True

    def find(self, model: str) -> ModelFacts | None:
        """The facts of ``model`` (see the module docstring), or None."""
        name = model.lower()
        for prefix in _BEDROCK_REGIONS:
            name = name.removeprefix(prefix)
        for vendor in _BEDROCK_VENDORS:
            name = name.removeprefix(vendor)
        found = [facts for facts in self.models if _separated(name, facts.id)]
        return max(found, key=lambda facts: len(facts.id), default=None)

    def offered(self) -> list[str]:
        """The ids the ``model`` picker may offer: none unless the ids name
        models, and no retired one."""
        if not self.names_models:
            return []
        return [facts.id for facts in self.models if not facts.retired]


Prices = tuple[float, float, float, float | None]
# The day the vendors' pages below were read.
READ_ON = "2026-12-06"


def _model(
    model_id: str, window: int, prices: Prices, *, reasoning: bool, retired: bool = False
) -> ModelFacts:
    """A model with its (input, output, cache write, cache read) prices."""
    input_price, output_price, cache_write, cache_read = prices
    return ModelFacts(
        model_id, window, input_price, output_price, cache_write, cache_read, reasoning, retired
    )


def _claude(input_price: float, output_price: float, read: float | None = None) -> Prices:
    # Anthropic: a 5-minute cache write costs 1.25x the input price, a read
    # 0.1x unless the pricing page says otherwise (the 5.1 and 5.5 models).
    return (
        input_price,
        output_price,
        round(input_price * 1.25, 6),
        round(input_price * 0.1, 6) if read is None else read,
    )


def _cached(input_price: float, output_price: float, read: float | None) -> Prices:
    # OpenAI and Gemini cache by themselves and report only the reads (the
    # adapters see no writes): the write price is the input price; a read
    # price the pages do not give is left out (the input price).
    return (input_price, output_price, input_price, read)


_M = 1_000_000
CLAUDE_MODELS = ModelTable(
    sources=(
        "https://platform.claude.com/docs/en/about-claude/models/overview",
        "https://platform.claude.com/docs/en/about-claude/pricing",
        "https://platform.claude.com/docs/en/about-claude/model-deprecations",
    ),
    read_on=READ_ON,
    models=(
        _model("claude-fable-5-2", _M, _claude(8.0, 40.0, 0.2), reasoning=True),
        _model("claude-fable-5-1", _M, _claude(10.0, 50.0, 0.25), reasoning=True),
        _model("claude-fable-5", _M, _claude(10.0, 50.0, 1.0), reasoning=True),
        _model("claude-opus-5-5", _M, _claude(4.0, 20.0, 0.2), reasoning=True),
        _model("claude-opus-5", _M, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-8", _M, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-7", _M, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-6", _M, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-5", 200_000, _claude(5.0, 25.0), reasoning=True),
        _model("claude-opus-4-1", 200_000, _claude(15.0, 75.0), reasoning=True, retired=True),
        _model("claude-opus-4", 200_000, _claude(15.0, 75.0), reasoning=True, retired=True),
        _model("claude-sonnet-5-5", _M, _claude(2.0, 10.0, 0.1), reasoning=True),
        _model("claude-sonnet-5", _M, _claude(2.0, 10.0), reasoning=True),
        _model("claude-sonnet-4-6", _M, _claude(3.0, 15.0), reasoning=True),
        _model("claude-sonnet-4-5", 200_000, _claude(3.0, 15.0), reasoning=True),
        _model("claude-sonnet-4", 200_000, _claude(3.0, 15.0), reasoning=True, retired=True),
        # Haiku 5.5's prompts up to 100K tokens (over that, 5x).
        _model("claude-haiku-5-5", _M, _claude(0.1, 0.5, 0.01), reasoning=True),
        _model("claude-haiku-4-5", 200_000, _claude(1.0, 5.0), reasoning=True),
        _model("claude-3-7-sonnet", 200_000, _claude(3.0, 15.0), reasoning=True, retired=True),
        _model("claude-3-5-sonnet", 200_000, _claude(3.0, 15.0), reasoning=False, retired=True),
        _model("claude-3-5-haiku", 200_000, _claude(0.8, 4.0), reasoning=False),
        _model("claude-3-haiku", 200_000, _claude(0.25, 1.25), reasoning=False),
    ),
)

# The GPT-6 family's context window: 922K of input, 128K of output.
_GPT6_WINDOW = 1_050_000
OPENAI_MODELS = ModelTable(
    sources=(
        "https://developers.openai.com/api/docs/models",
        "https://developers.openai.com/api/docs/pricing",
    ),
    read_on=READ_ON,
    models=(
        _model("gpt-6.2-astra", _GPT6_WINDOW, _cached(8.0, 40.0, 0.4), reasoning=True),
        _model("gpt-6.2-sol", _GPT6_WINDOW, _cached(2.0, 10.0, 0.1), reasoning=True),
        _model("gpt-6.1-terra", _GPT6_WINDOW, _cached(1.0, 5.0, 0.05), reasoning=True),
        _model("gpt-6.1-sol", _GPT6_WINDOW, _cached(2.0, 10.0, 0.1), reasoning=True),
        _model("gpt-6-astra", _GPT6_WINDOW, _cached(10.0, 50.0, 1.0), reasoning=True),
        _model("gpt-6-sol", _GPT6_WINDOW, _cached(2.0, 10.0, 0.2), reasoning=True),
        _model("gpt-6-luna", _GPT6_WINDOW, _cached(0.1, 0.5, 0.01), reasoning=True),
        _model("gpt-5.6-sol", _GPT6_WINDOW, _cached(4.0, 20.0, None), reasoning=True),
        _model("gpt-5.6-terra", _GPT6_WINDOW, _cached(2.0, 12.0, 0.2), reasoning=True),
        _model("gpt-5.6-luna", _GPT6_WINDOW, _cached(0.2, 1.2, 0.02), reasoning=True),
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
    sources=(
        "https://ai.google.dev/gemini-api/docs/models",
        "https://ai.google.dev/gemini-api/docs/pricing",
    ),
    read_on=READ_ON,
    models=(
        # Gemini 4 Argon's launch price ($2 / $10) ended on 2026-11-30.
        _model("gemini-4-argon", _GEMINI_WINDOW, _cached(4.0, 20.0, 0.2), reasoning=True),
        # Gemini 3.8 Flash: this price through 2026-12-31.
        _model("gemini-3.8-flash", _GEMINI_WINDOW, _cached(0.75, 3.75, 0.075), reasoning=True),
        _model("gemini-3.7-flash", _GEMINI_WINDOW, _cached(0.75, 3.75, 0.075), reasoning=True),
        _model("gemini-3.6-flash", _GEMINI_WINDOW, _cached(1.5, 7.5, None), reasoning=True),
        _model("gemini-3.5-flash", _GEMINI_WINDOW, _cached(1.5, 9.0, None), reasoning=True),
        _model("gemini-3.1-pro", _GEMINI_WINDOW, _cached(2.0, 12.0, 0.2), reasoning=True),
        _model("gemini-3.1-flash-lite", _GEMINI_WINDOW, _cached(0.25, 1.5, 0.025), reasoning=True),
        _model("gemini-3-flash", _GEMINI_WINDOW, _cached(0.5, 3.0, 0.05), reasoning=True),
        _model("gemini-2.5-pro", _GEMINI_WINDOW, _cached(1.25, 10.0, 0.125), reasoning=True),
        _model("gemini-2.5-flash", _GEMINI_WINDOW, _cached(0.3, 2.5, 0.03), reasoning=True),
        _model("gemini-2.5-flash-lite", _GEMINI_WINDOW, _cached(0.1, 0.4, 0.01), reasoning=True),
        _model("gemini-2.0-flash", _GEMINI_WINDOW, _cached(0.1, 0.4, 0.025), reasoning=False),
        _model(
            "gemini-2.0-flash-lite", _GEMINI_WINDOW, _cached(0.075, 0.3, 0.075), reasoning=False
        ),
    ),
)

# Bedrock serves the Claude models, taken at Anthropic's prices, under its
# own ids (``anthropic.claude-opus-5-5``, ``global.anthropic.claude-opus-5-5``).
BEDROCK_MODELS = ModelTable(
    sources=(
        *CLAUDE_MODELS.sources,
        "https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-opus-5-5.html",
    ),
    read_on=READ_ON,
    models=CLAUDE_MODELS.models,
    names_models=False,
)
# Azure deployments are named by their owners: a deployment named as its
# model (``gpt-6.2-sol``) is found, any other name is not. OpenAI's models,
# taken at OpenAI's list prices (Azure's differ by region and deployment type).
AZURE_MODELS = ModelTable(
    sources=OPENAI_MODELS.sources,
    read_on=READ_ON,
    models=OPENAI_MODELS.models,
    names_models=False,
)
