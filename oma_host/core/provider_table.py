"""The providers' facts the start needs (key variables, auth methods,
default models), as JSON generated from :mod:`.provider_facts`: importing
the descriptors would double ``oma-host acp``'s time to answer ``initialize``.

``python3 -m oma_host.core.provider_table`` writes the file; a test holds it
equal to the descriptors.
"""

from __future__ import annotations

import os
import sys

from oma_host.core import quickjson

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

TABLE_PATH = os.path.join(os.path.dirname(__file__), "provider_table.json")
_table: dict[str, Any] = {}


def provider_table() -> dict[str, Any]:
    """The generated table, read once."""
    if not _table:
        with open(TABLE_PATH, "rb") as file:
            _table.update(quickjson.loads(file.read().decode("utf-8")))
    return _table


def offered(facts: dict[str, Any]) -> bool:
    """Whether this host offers a provider of the table (read when asked, as
    :meth:`.provider_facts.ProviderFacts.offered` reads it)."""
    variable = facts["offeredWhen"]
    return variable is None or os.environ.get(variable) == "1"


def build() -> str:
    """The table's text, from the descriptors."""
    import json

    from oma_host.core.provider_facts import DEFAULT_PROVIDER, PROVIDERS

    table: dict[str, Any] = {
        "generatedBy": "python3 -m oma_host.core.provider_table "
        "(from oma_host/core/provider_facts.py; do not edit)",
        "defaultProvider": DEFAULT_PROVIDER,
        # The providers a default agent may use, in the order tried.
        "defaultCandidates": [
            facts.name for facts in PROVIDERS if facts.key_variables and facts.default_model
        ],
        "providers": {
            facts.name: {
                "defaultModel": facts.default_model,
                "keyVariables": list(facts.key_variables),
                "authMethods": [
                    {
                        "required": list(method.required),
                        "optional": list(method.optional),
                        "public": list(method.public),
                    }
                    for method in facts.auth_methods
                ],
                "offeredWhen": facts.offered_when,
            }
            for facts in PROVIDERS
        },
    }
    return json.dumps(table, indent=2) + "\n"


def main(argv: list[str]) -> int:
    if argv:
        print("usage: python3 -m oma_host.core.provider_table", file=sys.stderr)
        return 2
    with open(TABLE_PATH, "w", encoding="utf-8") as file:
        file.write(build())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
