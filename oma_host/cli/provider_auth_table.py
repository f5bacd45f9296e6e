"""``python3 -m oma_host.cli.provider_auth_table`` writes
``oma_host/acp_server/provider_auth.json`` from the providers' descriptors.

The command line and the ACP door's first answer read these facts as JSON:
importing the descriptors would double ``oma-host acp``'s start."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from oma_host.core.provider_facts import DEFAULT_PROVIDER, PROVIDERS

TABLE_PATH = Path(__file__).resolve().parents[1] / "acp_server" / "provider_auth.json"


def build() -> str:
    """The file's text."""
    table: dict[str, Any] = {
        "generatedBy": "python3 -m oma_host.cli.provider_auth_table "
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
        print("usage: python3 -m oma_host.cli.provider_auth_table", file=sys.stderr)
        return 2
    TABLE_PATH.write_text(build(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
