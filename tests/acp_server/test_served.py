"""docs/acp.md's table of what the door serves names every method and every
``session/update`` kind of the stable v1 schema the tests pin, so a schema
that grows fails here rather than going unanswered in the table."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMA = (
    ROOT / "tests/acp_server/client/node_modules/@agentclientprotocol/sdk/schema/v1/schema.json"
)


def _table() -> set[str]:
    """The names in backticks in the first column of the table under
    "Against the stable schema"."""
    text = (ROOT / "docs" / "acp.md").read_text()
    section = text.split("### Against the stable schema", 1)[1].split("\n#", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names.update(re.findall(r"`([^`]+)`", line.split("|")[1]))
    return names


def test_the_table_names_every_method_of_the_stable_schema() -> None:
    methods = set(re.findall(r'"x-method": "([^"]+)"', SCHEMA.read_text()))
    assert "session/prompt" in methods and "elicitation/create" in methods
    assert sorted(methods - _table()) == []


def test_the_table_names_every_session_update_of_the_stable_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    union = schema["$defs"]["SessionUpdate"]
    kinds = {
        option["properties"]["sessionUpdate"]["const"]
        for option in union.get("oneOf", union.get("anyOf", []))
    }
    assert "agent_message_chunk" in kinds and "notice" in kinds
    assert sorted(kinds - _table()) == []
