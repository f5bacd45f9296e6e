"""``editors/vscode/src/core/protocol.ts``: the VS Code client's wire types
are what ``docs/protocol.schema.json`` generates, and the generator refuses a
schema it cannot write rather than typing it ``unknown``."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.schema import ROOT, SCHEMA_PATH
from oma_host.cli.ts_types import TS_PATH, SchemaError, generate, render

SCHEMA: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_the_checked_in_types_are_what_the_schema_generates() -> None:
    assert TS_PATH.read_text(encoding="utf-8") == render(), (
        "editors/vscode/src/core/protocol.ts is stale: run `python3 -m oma_host.cli.ts_types`"
    )


def test_the_command_writes_the_file_where_it_is_told(tmp_path: Path) -> None:
    out = tmp_path / "protocol.ts"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "oma_host.cli.ts_types", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == TS_PATH.read_text(encoding="utf-8")


def test_every_definition_method_and_notification_is_declared() -> None:
    text = render()
    for name in SCHEMA["$defs"]:
        assert f"export interface {name} {{" in text or f"export type {name} =" in text, name
    for section in ("methods", "serverRequests"):
        for method in SCHEMA[section]:
            assert f"  '{method}': {{ params: " in text or f"  {method}: {{ params: " in text
    for method in SCHEMA["notifications"]:
        assert f"  '{method}': " in text, method


def test_a_change_to_the_schema_changes_the_types() -> None:
    changed = copy.deepcopy(SCHEMA)
    status = changed["$defs"]["RunStatus"]["properties"]["code"]
    status["enum"] = [*status["enum"], "paused"]
    changed["$defs"]["RunStatus"]["required"].append("message")
    text = generate(changed)
    assert text != render()
    assert "'budget_exhausted' | 'paused'" in text
    assert "  message: string;" in text.split("export interface RunStatus {")[1].split("}")[0]


def test_objects_unions_and_maps_are_written_as_typescript() -> None:
    schema = {
        "protocolVersion": "9",
        "$defs": {
            "Thing": {
                "description": "A ``thing``.",
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "what it is called"},
                    "size": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                    "kind": {"enum": ["a", "b'c"]},
                    "tags": {
                        "type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "number"}]},
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "ids": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "propertyNames": {"const": "runId"},
                    },
                    "next": {"$ref": "#/$defs/Thing"},
                    "any": {},
                },
                "required": ["name", "kind"],
            },
        },
        "methods": {
            "thing/get": {
                "params": {
                    "type": "object",
                    "title": "GetParams",
                    "properties": {"id": {"type": "string"}},
                    "required": ["id"],
                    "additionalProperties": True,
                },
                "result": {"anyOf": [{"$ref": "#/$defs/Thing"}, {"type": "null"}]},
            }
        },
        "serverRequests": {},
        "notifications": {"thing/changed": {"$ref": "#/$defs/Thing"}},
    }
    text = generate(schema)
    assert "export const PROTOCOL_VERSION = '9';" in text
    thing = text.split("/** A `thing`. */\nexport interface Thing {\n")[1].split("\n}\n")[0]
    assert thing.splitlines() == [
        "  /** what it is called */",
        "  name: string;",
        "  size?: number | null;",
        "  kind: 'a' | 'b\\'c';",
        "  tags?: Array<string | number>;",
        "  labels?: Record<string, string>;",
        "  ids?: { [key in 'runId']?: string };",
        "  next?: Thing;",
        "  any?: unknown;",
    ]
    assert "export interface GetParams {\n  id: string;\n  [field: string]: unknown;\n}" in text
    assert "  'thing/get': { params: GetParams; result: Thing | null };" in text
    assert "  'thing/changed': Thing;" in text


def _broken(path: list[str], value: Any) -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMA)
    where = schema
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return schema


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ["$defs", "RunStatus", "properties", "code", "allOf"],
            [{"type": "string"}],
            "$defs/RunStatus/properties/code: no TypeScript for the keyword 'allOf'",
        ),
        (
            ["$defs", "RunStatus", "properties", "code"],
            {"$ref": "#/$defs/Nowhere"},
            "$defs/RunStatus/properties/code: $ref '#/$defs/Nowhere' names no entry of $defs",
        ),
        (
            ["$defs", "RunStatus", "properties", "message", "type"],
            "date",
            "$defs/RunStatus/properties/message: no TypeScript for the type 'date'",
        ),
        (
            ["methods", "agent/history", "result", "title"],
            "AgentIdParams",
            "methods/agent/history/result: the title 'AgentIdParams' names two different types",
        ),
    ],
)
def test_a_schema_it_cannot_write_is_an_error_naming_where(
    path: list[str], value: Any, message: str
) -> None:
    with pytest.raises(SchemaError) as raised:
        generate(_broken(path, value))
    assert str(raised.value) == message
