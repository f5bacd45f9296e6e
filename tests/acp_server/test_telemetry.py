"""The ACP door exports each prompt turn's spans over OTLP/HTTP: ``oma-host
acp`` driven by the TypeScript SDK's client, told by the standard variable
or by its own options, and a receiver decoding what arrives with
``opentelemetry-proto``. Content capture with no export records the
conversation in the state directory alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, text
from tests.acp_server.raw_editor import raw_editor, stderr_of
from tests.builders import reply, tool_use
from tests.cli.recorded_runs import flatten, oma_runs
from tests.telemetry.receiver import Receiver, by_operation, children

PROMPT = "PROMPT-MARKER-acp read the notes"


@pytest.fixture
def collector() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


def _turn(door: Door) -> str:
    """One prompt turn with a tool call; the session's id."""
    door.write_agents(first=door.llm(tools=["file_read"]))
    (door.cwd / "notes.txt").write_text("forty-two")
    call = tool_use("call_1", "file_read", path="notes.txt")
    door.sim.script(reply(call), Reply.text("It says forty-two."))
    _, new, turn = door.run(initialize(), new_session(door.cwd), prompt(text(PROMPT)))
    assert turn["result"]["stopReason"] == "end_turn"
    session_id: str = new["result"]["sessionId"]
    return session_id


def test_a_prompt_turn_is_exported_as_a_trace_of_the_session(
    door: Door, collector: Receiver
) -> None:
    door.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    session_id = _turn(door)
    spans = collector.spans  # the door flushed them before it exited
    (root,) = [span for span in spans if span.parent_id is None]
    assert root.name == "invoke_agent claude"
    assert root.attributes["gen_ai.conversation.id"] == session_id
    assert root.attributes["gen_ai.provider.name"] == "anthropic"
    assert [span.name for span in children(spans, root)] == [
        "chat model-one",
        "execute_tool file_read",
        "chat model-one",
    ]
    assert root.resource["service.name"] == "oma-host"
    assert b"PROMPT-MARKER" not in collector.raw and b"forty-two" not in collector.raw


def test_the_command_line_options_turn_it_on_with_content(door: Door, collector: Receiver) -> None:
    door.flags += [
        "--telemetry-endpoint",
        collector.endpoint,
        "--telemetry-capture-content",
        "true",
    ]
    _turn(door)
    (root,) = by_operation(collector.spans, "invoke_agent")
    assert "PROMPT-MARKER-acp" in root.attributes["gen_ai.input.messages"]
    (tool,) = by_operation(collector.spans, "execute_tool")
    assert tool.attributes["gen_ai.tool.call.result"] == "forty-two"


def test_no_telemetry_turns_off_the_export_the_environment_and_options_ask_for(
    door: Door, collector: Receiver
) -> None:
    """``--no-telemetry`` wins over ``OTEL_EXPORTER_OTLP_ENDPOINT`` and over
    ``--telemetry-endpoint``: the collector receives nothing, and the turn
    is recorded in the state directory all the same."""
    door.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    door.flags += ["--telemetry-endpoint", collector.endpoint, "--no-telemetry"]
    session_id = _turn(door)
    assert collector.received.bodies == []  # the door has exited: nothing is on its way
    listed = oma_runs(door.state, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["sessionId"], row["status"], row["turns"]) == (session_id, "ok", 2)


def test_content_capture_without_an_endpoint_records_the_conversation_in_the_store(
    door: Door, collector: Receiver
) -> None:
    """``--telemetry-capture-content true`` alone: nothing is exported, and
    the turn's spans in the state directory hold the prompt, the reply and
    the tool call's arguments and result, the agent's key redacted."""
    key = door.env["ANTHROPIC_API_KEY"]
    door.flags += ["--telemetry-capture-content", "true"]
    door.write_agents(first=door.llm(tools=["file_read"]))
    (door.cwd / "notes.txt").write_text(f"forty-two, and the key {key}")
    call = tool_use("call_1", "file_read", path="notes.txt")
    door.sim.script(reply(call), Reply.text("It says forty-two."))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text(f"{PROMPT} {key}")))
    assert turn["result"]["stopReason"] == "end_turn"
    assert collector.received.bodies == []
    (row,) = json.loads(oma_runs(door.state, "list", "--json").stdout)
    # The listing's prompt (redacted) and the session's title (from its first prompt).
    assert row["prompt"] == "PROMPT-MARKER-acp read the notes [redacted]"
    assert row["sessionTitle"].startswith("PROMPT-MARKER-acp read the notes")
    assert key not in row["sessionTitle"]
    shown = oma_runs(door.state, "show", row["runId"], "--json")
    assert shown.returncode == 0, shown.stderr
    spans = [span for _, span in flatten(json.loads(shown.stdout)["spans"])]
    (root,) = [span for span in spans if span["operation"] == "invoke_agent"]
    (tool,) = [span for span in spans if span["operation"] == "execute_tool"]
    chats = [span for span in spans if span["operation"] == "chat"]
    captured_input = root["attributes"]["gen_ai.input.messages"]
    assert "PROMPT-MARKER-acp read the notes [redacted]" in captured_input
    assert "It says forty-two." in root["attributes"]["gen_ai.output.messages"]
    assert json.loads(tool["attributes"]["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
    assert tool["attributes"]["gen_ai.tool.call.result"] == "forty-two, and the key [redacted]"
    assert "It says forty-two." in chats[-1]["attributes"]["gen_ai.output.messages"]
    assert key not in shown.stdout


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
EDITOR_SPAN = "00f067aa0ba902b7"


async def test_a_prompt_with_a_traceparent_continues_the_editors_trace(
    door: Door, collector: Receiver
) -> None:
    """``_meta.traceparent`` on ``session/prompt``: the run's spans are in the
    editor's trace, its root a child of the editor's span, ``tracestate``
    kept; the door's request to the editor during the run (a permission
    ask) names the run's span in its own ``_meta.traceparent``."""
    door.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    door.write_agents(first=door.llm(tools=["file_write"]))
    door.sim.script(
        reply(tool_use("w", "file_write", path="out.txt", content="hi")), Reply.text("written")
    )
    async with raw_editor(door) as editor:
        editor.on_request = _allow_once
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        meta = {"traceparent": f"00-{TRACE_ID}-{EDITOR_SPAN}-01", "tracestate": "zed=1"}
        turn = await editor.call(
            "session/prompt",
            {"sessionId": session_id, "prompt": [text("write it")], "_meta": meta},
        )
        assert turn["result"]["stopReason"] == "end_turn", turn
        (asked,) = [m for m in editor.received if m.get("method") == "session/request_permission"]
        await stderr_of(editor)  # the door exits, flushing its spans
    spans = collector.spans
    assert spans and {span.trace_id for span in spans} == {TRACE_ID}
    (root,) = by_operation(spans, "invoke_agent")
    assert root.parent_id == EDITOR_SPAN
    assert root.trace_state == "zed=1"
    version, trace_id, span_id, flags = asked["params"]["_meta"]["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", TRACE_ID, "01")
    assert span_id in {span.span_id for span in spans}


async def test_a_traceparent_on_session_new_is_the_parent_of_its_prompts(
    door: Door, collector: Receiver
) -> None:
    door.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    door.sim.script(Reply.text("hello"))
    async with raw_editor(door) as editor:
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        meta = {"traceparent": f"00-{TRACE_ID}-{EDITOR_SPAN}-01"}
        new = await editor.call(
            "session/new", {"cwd": str(door.cwd), "mcpServers": [], "_meta": meta}
        )
        prompted = {"sessionId": new["result"]["sessionId"], "prompt": [text("hi")]}
        assert (await editor.call("session/prompt", prompted))["result"]["stopReason"]
        await stderr_of(editor)
    (root,) = by_operation(collector.spans, "invoke_agent")
    assert (root.trace_id, root.parent_id) == (TRACE_ID, EDITOR_SPAN)


async def test_a_malformed_traceparent_starts_a_trace_of_its_own(
    door: Door, collector: Receiver
) -> None:
    door.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    door.sim.script(Reply.text("hello"))
    async with raw_editor(door) as editor:
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        meta = {"traceparent": f"00-{'0' * 32}-{EDITOR_SPAN}-01"}
        prompted = {"sessionId": new["result"]["sessionId"], "prompt": [text("hi")], "_meta": meta}
        assert (await editor.call("session/prompt", prompted))["result"]["stopReason"]
        await stderr_of(editor)
    (root,) = by_operation(collector.spans, "invoke_agent")
    assert root.parent_id is None and root.trace_id != "0" * 32


def _allow_once(request: dict[str, Any]) -> dict[str, Any]:
    if request["method"] == "session/request_permission":
        allow = next(o for o in request["params"]["options"] if o["kind"] == "allow_once")
        return {"result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}}
    return {"result": {}}
