"""``docs/providers.md``: its provider table is what the descriptors
(``core/provider_facts.py``) generate."""

from __future__ import annotations

from oma_host.cli.providers_doc import (
    PROVIDERS_DOC,
    models_table,
    table,
    with_estimates,
    with_models,
    with_table,
)
from oma_host.core.provider_facts import PROVIDERS


def test_the_provider_table_is_what_the_descriptors_generate() -> None:
    document = PROVIDERS_DOC.read_text(encoding="utf-8")
    assert with_table(document) == document, (
        "docs/providers.md is stale: run `python3 -m oma_host.cli.providers_doc`"
    )


def test_the_table_has_one_row_per_provider_and_notices_a_change() -> None:
    rows = [line for line in table().splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == [facts.name for facts in PROVIDERS]
    # A document whose table is out of date gets the generated one back.
    document = PROVIDERS_DOC.read_text(encoding="utf-8")
    stale = document.replace(table(), "| an old table |\n")
    assert stale != document
    assert with_table(stale) == document


def test_the_model_table_is_what_the_model_facts_generate() -> None:
    document = PROVIDERS_DOC.read_text(encoding="utf-8")
    assert with_models(document) == document, (
        "docs/providers.md is stale: run `python3 -m oma_host.cli.providers_doc`"
    )
    lines = models_table().splitlines()
    rows = [line for line in lines if line.startswith("| `") and line.count("|") == 9]
    assert len(rows) == sum(len(facts.models.models) for facts in PROVIDERS)
    assert "| `anthropic` | `claude-sonnet-5-5` | 1,000,000 | 2 | 10 | 2.5 | 0.1 | yes |" in rows
    assert "| `anthropic` | `claude-sonnet-4-5` | 200,000 | 3 | 15 | 3.75 | 0.3 | yes |" in rows
    assert "| `anthropic` | `claude-3-5-sonnet` (retired) | 200,000 |" in "\n".join(rows)
    # Each provider's table says where it was read and when.
    claude = "https://platform.claude.com/docs/en/about-claude/pricing"
    assert "| `anthropic` | 2026-12-06 | <https://platform.claude.com" in document
    assert claude in document


def test_the_estimates_table_is_what_the_descriptors_generate() -> None:
    document = PROVIDERS_DOC.read_text(encoding="utf-8")
    assert with_estimates(document) == document, (
        "docs/providers.md is stale: run `python3 -m oma_host.cli.providers_doc`"
    )
    assert "| `anthropic` | 3.5 | 1,600 |" in document
