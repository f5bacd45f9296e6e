"""``oma-host schema``: the committed document matches the models, and real
wire data validates against it."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from oma_host import Agent
from oma_host.cli.schema import SCHEMA_PATH, build_schema, render_schema


def test_committed_schema_matches_the_models() -> None:
    committed = SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == render_schema(), (
        "docs/protocol.schema.json is stale: run `oma-host schema --out docs/protocol.schema.json`"
    )


def _validator(pointer: dict[str, Any]) -> jsonschema.Draft202012Validator:
    document = json.loads(render_schema())
    return jsonschema.Draft202012Validator({**pointer, "$defs": document["$defs"]})


async def test_real_results_and_inputs_validate_against_the_schema() -> None:
    agent = Agent({"name": "s", "provider": "test", "model": "echo"})
    conversation = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": "r"}],
                },
                {"type": "custom_block", "anything": 1},
            ],
        }
    ]
    result = await agent.run(conversation)
    _validator({"$ref": "#/$defs/AgentRunResult"}).validate(result)
    _validator({"$ref": "#/$defs/RunInput"}).validate(conversation)
    _validator({"$ref": "#/$defs/RunInput"}).validate("a string")
    bad = [{"role": "robot", "content": []}]
    assert list(_validator({"$ref": "#/$defs/RunInput"}).iter_errors(bad))


def test_every_method_and_the_terminal_flag_are_described() -> None:
    document = build_schema()
    assert {"agent/run", "agent/stream", "oma/runTeam", "oma/evaluation/records"} <= set(
        document["methods"]
    )
    process = document["$defs"]["ProcessBackend"]["properties"]
    assert process["terminal"] == {"default": False, "title": "Terminal", "type": "boolean"}
    assert set(document["serverRequests"]) == {
        "agent/beforeRun",
        "agent/afterRun",
        "agent/requestPermission",
        "oma/evaluation/score",
    }
