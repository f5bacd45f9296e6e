"""``docs/protocol.md``: its reference is what the method registry and the
schema generate, it covers every method, and every example exchange in it is
valid against the schema (params, results and notifications)."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
import pytest

from oma_host.cli.protocol_doc import PROTOCOL_DOC, with_reference
from oma_host.cli.schema import render_schema
from oma_host.server import registry

DOC = PROTOCOL_DOC.read_text(encoding="utf-8")
SCHEMA: dict[str, Any] = json.loads(render_schema())


def _examples() -> dict[str, list[dict[str, Any]]]:
    """Each ``#### `method``` example of the examples section: its messages."""
    section = DOC[DOC.index("<!-- examples -->") : DOC.index("<!-- /examples -->")]
    found: dict[str, list[dict[str, Any]]] = {}
    for name, block in re.findall(r"#### `([^`]+)`\s+```json\n(.*?)```", section, re.DOTALL):
        lines = [line for line in block.splitlines() if line.startswith(("→ ", "← "))]
        found[name] = [json.loads(line[2:]) for line in lines]
    return found


EXAMPLES = _examples()


def _check(instance: Any, schema: dict[str, Any], where: str) -> None:
    document = {**schema, "$defs": SCHEMA["$defs"]}
    try:
        jsonschema.validate(instance, document, cls=jsonschema.Draft202012Validator)
    except jsonschema.ValidationError as error:
        pytest.fail(f"{where}: {error.message} at {list(error.absolute_path)}")


def test_the_reference_is_what_the_registry_generates() -> None:
    assert with_reference(DOC) == DOC, (
        "docs/protocol.md is stale: run `python3 -m oma_host.cli.protocol_doc`"
    )


@pytest.mark.parametrize("method", [str(method) for method in registry.Method])
def test_every_method_has_a_reference_entry_and_an_example(method: str) -> None:
    assert f"### `{method}`" in DOC, f"{method} has no reference entry in docs/protocol.md"
    assert method in EXAMPLES, f"{method} has no example exchange in docs/protocol.md"


@pytest.mark.parametrize("method", sorted(EXAMPLES))
def test_each_example_is_valid_against_the_schema(method: str) -> None:
    messages = EXAMPLES[method]
    request = messages[0]
    assert request["method"] == method
    pair = SCHEMA["methods"][method]
    if "params" in request:
        _check(request["params"], pair["params"], f"{method} params")
    answers = [message for message in messages[1:] if message.get("id") == request["id"]]
    assert len(answers) == 1, f"{method}: the example needs exactly one answer"
    _check(answers[0]["result"], pair["result"], f"{method} result")
    for note in messages[1:]:
        if "id" not in note:
            _check(note["params"], SCHEMA["notifications"][note["method"]], note["method"])


def test_the_documented_protocol_version_is_the_schemas() -> None:
    version = SCHEMA["protocolVersion"]
    assert DOC.startswith(f"# The oma-host wire protocol, version {version}\n")
    assert f"This is protocol version {version}" in DOC
