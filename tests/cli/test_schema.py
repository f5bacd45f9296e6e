"""``oma-host schema`` comes from the method registry and matches what is
committed; real wire data validates
against the schema; the registry's light index and its handlers agree."""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel

from oma_host import Agent, InvalidParamsError
from oma_host.cli.schema import SCHEMA_PATH, build_schema, render_schema
from oma_host.core.events import RunEvent
from oma_host.core.results import StreamEvent
from oma_host.server import registry
from oma_host.server.context import RequestContext


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


def _tags(union: Any) -> set[str]:
    """The ``type`` of each event of a union of event TypedDicts."""
    return {typing.get_type_hints(event)["type"].__args__[0] for event in typing.get_args(union)}


def test_the_schema_names_every_event_of_the_union_by_its_type() -> None:
    # The unions in core/events.py and core/results.py are the list of events:
    # the schema's discriminators must name each of them, and nothing else.
    defs = build_schema()["$defs"]
    run_events = _tags(RunEvent)
    assert _tags(StreamEvent) == run_events | {"done"}
    for name, tags in (("StreamEvent", run_events | {"done"}), ("RunEvent", run_events)):
        union = defs[name]
        assert union["discriminator"]["propertyName"] == "type"
        assert set(union["discriminator"]["mapping"]) == tags, name
        assert len(union["oneOf"]) == len(tags), name
        for option in union["oneOf"]:
            event = defs[option["$ref"].rsplit("/", 1)[-1]]
            assert event["properties"]["type"]["const"] in tags, name


async def test_streamed_events_validate_against_the_schema_and_a_mistyped_one_does_not() -> None:
    agent = Agent({"name": "s", "provider": "test", "model": "echo"})
    events = [event async for event in agent.stream("hello there")]
    assert [event["type"] for event in events][-1] == "done"
    stream = _validator({"$ref": "#/$defs/StreamEvent"})
    for event in events:
        stream.validate(event)
    progress = _validator({"$ref": "#/$defs/RunEvent"})
    for event in events[:-1]:
        progress.validate(event)
    assert list(progress.iter_errors(events[-1]))  # done is never $/progress
    assert list(stream.iter_errors({"type": "tool_use", "data": "not a block"}))
    assert list(stream.iter_errors({"type": "error", "data": {"kind": "provider"}}))
    assert list(stream.iter_errors({"type": "no_such_event", "data": None}))


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
        "workspace/applyEdit",
    }


def test_every_method_of_the_index_has_one_declared_handler_in_its_module() -> None:
    specs = registry.load_all()
    assert [spec.method for spec in specs] == list(registry.Method)
    # The light index and the handlers agree: same methods, same modules.
    assert registry.declared() == dict(registry.IMPLEMENTED_IN)
    for spec in specs:
        ctx, _ = inspect.signature(spec.handler).parameters
        assert typing.get_type_hints(spec.handler)[ctx] is RequestContext, spec.method
        assert spec.result is not None, spec.method
        assert spec.summary, f"{spec.method}: its handler has no docstring"
        if spec.params is None:
            continue
        wire = spec.params.wire_model()
        assert isinstance(wire, type) and issubclass(wire, BaseModel), spec.method
        if issubclass(spec.params, BaseModel):
            assert wire is spec.params


def test_params_errors_name_the_method_and_the_field() -> None:
    spec = registry.load(registry.Method.RUN_TASKS)
    team = {"agents": [{"name": "a", "provider": "test", "model": "echo"}]}
    tasks = [{"title": "t", "description": "d"}] * 2 + [{"title": "t", "description": [1]}]
    with pytest.raises(InvalidParamsError) as caught:
        spec.parse({"team": team, "tasks": tasks})
    assert str(caught.value).startswith(
        "oma/runTasks: params.tasks[2].description must be a string: team tasks and goals"
    )
    with pytest.raises(InvalidParamsError, match=r"^agent/run: params\.agentId: Field required"):
        registry.load(registry.Method.AGENT_RUN).parse({"input": "x"})
    with pytest.raises(InvalidParamsError, match=r"^agent/list: params must be an object$"):
        registry.load(registry.Method.AGENT_LIST).parse([1])
