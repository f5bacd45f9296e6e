"""The generated tables of docs/providers.md, from the provider descriptors.

So the docs say what the code does: the text between each pair of markers is
this module's output and a test fails when it differs. ``python3 -m
oma_host.cli.providers_doc`` rewrites them.
"""

from __future__ import annotations

import sys

from oma_host.cli.generated_doc import GeneratedPart
from oma_host.cli.schema import ROOT
from oma_host.core.provider_facts import PROVIDERS, ProviderFacts

PROVIDERS_DOC = ROOT / "docs" / "providers.md"
START = "<!-- providers:begin -->"
END = "<!-- providers:end -->"
_NONE = "\N{EN DASH}"  # as the hand-written tables mark an empty cell


def _code(names: tuple[str, ...] | list[str], joiner: str) -> str:
    return joiner.join(f"`{name}`" for name in names) or _NONE


def _endpoint(facts: ProviderFacts) -> str:
    """Where an agent without ``baseURL`` sends: the variables, then the default."""
    variables = _code(facts.base_url_variables, ", then ") if facts.base_url_variables else ""
    if facts.default_base_url:
        default = f"`{facts.default_base_url}`"
        return f"{variables}, else {default}" if variables else default
    return f"{variables} (required)" if variables else "in-process"


def _name(facts: ProviderFacts) -> str:
    if facts.offered_when:
        return f"`{facts.name}` (with `{facts.offered_when}=1`)"
    return f"`{facts.name}`"


def table() -> str:
    """The text between the markers."""
    rows = [
        "| provider | wire | endpoint without `baseURL` | key, in the order read "
        "| other secrets | default model | `models/list` | ACP auth methods |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for facts in PROVIDERS:
        cells = [
            _name(facts),
            facts.wire,
            _endpoint(facts),
            _code(facts.key_variables, ", then "),
            _code(facts.other_secrets, ", "),
            f"`{facts.default_model}`" if facts.default_model else _NONE,
            facts.model_list.endpoint if facts.model_list else _NONE,
            _code([method.id for method in facts.auth_methods], ", "),
        ]
        rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _price(value: float | None) -> str:
    return _NONE if value is None else f"{value:g}"


def models_table() -> str:
    """The text between the ``models`` markers: where each provider's table
    comes from and when it was read, then each provider's known models."""
    rows = ["| provider | read on | from |", "|---|---|---|"]
    for facts in PROVIDERS:
        if facts.models.models:
            sources = ", ".join(f"<{url}>" for url in facts.models.sources) or _NONE
            rows.append(f"| `{facts.name}` | {facts.models.read_on or _NONE} | {sources} |")
    rows += [
        "",
        "| provider | model (and ids it starts) | context window | input | output "
        "| cache write | cache read | thinking |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for facts in PROVIDERS:
        for model in facts.models.models:
            window = model.context_window
            cells = [
                f"`{facts.name}`",
                f"`{model.id}`",
                _NONE if window is None else f"{window:,}",
                _price(model.input_price),
                _price(model.output_price),
                _price(model.cache_write_price),
                _price(model.cache_read_price),
                "yes" if model.reasoning else "no",
            ]
            if model.retired:
                cells[1] += " (retired)"
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def estimates_table() -> str:
    """The text between the ``estimates`` markers: how each provider's
    tokens are estimated before a request (context compaction)."""
    rows = [
        "| provider | characters per token | tokens per image or file |",
        "|---|---|---|",
    ]
    for facts in PROVIDERS:
        rows.append(f"| `{facts.name}` | {facts.chars_per_token:g} | {facts.image_tokens:,} |")
    return "\n".join(rows) + "\n"


_MODULE = "oma_host.cli.providers_doc"
PART = GeneratedPart(PROVIDERS_DOC, START, END, table, _MODULE)
MODELS_PART = GeneratedPart(
    PROVIDERS_DOC, "<!-- models:begin -->", "<!-- models:end -->", models_table, _MODULE
)
ESTIMATES_PART = GeneratedPart(
    PROVIDERS_DOC, "<!-- estimates:begin -->", "<!-- estimates:end -->", estimates_table, _MODULE
)
with_table = PART.spliced
with_models = MODELS_PART.spliced
with_estimates = ESTIMATES_PART.spliced

if __name__ == "__main__":
    sys.exit(
        PART.main(sys.argv[1:])
        or MODELS_PART.main(sys.argv[1:])
        or ESTIMATES_PART.main(sys.argv[1:])
    )
