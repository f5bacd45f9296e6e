"""The generated table of ``docs/providers.md``: one row per provider, written
from the descriptors (:mod:`oma_host.core.provider_facts`) so the docs say
what the code does: the wire, the default endpoint, the key variables in the
order they are read, the default model, the model list and the ACP auth
methods. The text between the ``providers`` markers is this module's output,
and a test fails when it differs; ``python3 -m oma_host.cli.providers_doc``
rewrites it.
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
    if facts.default_base_url:
        return f"`{facts.default_base_url}`"
    if facts.endpoint_variable:
        return f"`baseURL`, else `{facts.endpoint_variable}`"
    return "in-process"


def _name(facts: ProviderFacts) -> str:
    if facts.offered_when:
        return f"`{facts.name}` (with `{facts.offered_when}=1`)"
    return f"`{facts.name}`"


def table() -> str:
    """The text between the markers."""
    rows = [
        "| provider | wire | default endpoint | key, in the order read "
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


PART = GeneratedPart(PROVIDERS_DOC, START, END, table, "oma_host.cli.providers_doc")
with_table = PART.spliced

if __name__ == "__main__":
    sys.exit(PART.main(sys.argv[1:]))
