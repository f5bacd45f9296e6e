"""The JSON-RPC door exports its runs' spans over OTLP/HTTP: a real
``oma-host`` (the provider simulator answering) with
``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a receiver on 127.0.0.1 that
decodes what arrives with the ``opentelemetry-proto`` package. One host
makes a run with two tool calls (one allowed, one denied), a compaction, a
delegation to a process agent and a team run; the tests read the span trees
the receiver got, their GenAI attributes, the resource, and search the bytes
received for the key and the message text."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.core.version import __version__
from oma_host.testing.script import Reply
from oma_host.testing.simulator import Simulator, too_long_fault
from tests.builders import assistant, reply, text, tool_use, user
from tests.llm.compaction_helpers import summaries
from tests.providers.helpers import llm_config
from tests.telemetry.receiver import (
    ReceivedSpan,
    Receiver,
    by_operation,
    children,
    iter_tree,
    trace_of,
)

KEY = "sk-ant-api03-otel-test-key-DO-NOT-LEAK-31"
PROMPT = "What do the notes say? PROMPT-MARKER-7f3a"
FILE_TEXT = "FILE-CONTENT-MARKER-41 the answer is 42\n"
ANSWER = "ANSWER-MARKER-9c It says 42."
WORDS = "the quick brown fox jumps over the lazy dog " * 6
ECHO = 'printf "done: "; cat'
RUNS = [sys.executable, "-m", "oma_host", "runs"]
FIRST_USAGE = {
    "input_tokens": 5,
    "output_tokens": 7,
    "cache_creation_input_tokens": 1500,
    "cache_read_input_tokens": 0,
}
SECOND_USAGE = {
    "input_tokens": 9,
    "output_tokens": 3,
    "cache_creation_input_tokens": 40,
    "cache_read_input_tokens": 1500,
}


async def create(host: HostClient, config: dict[str, Any]) -> str:
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


@dataclass
class Exported:
    spans: list[ReceivedSpan]
    raw: bytes
    runs: dict[str, str]
    state: Path
    stderr: str
    summary_requests: int


async def _make_runs(sim: Simulator, collector: Receiver, state: Path, work: Path) -> Exported:
    host = await HostClient.spawn(
        host_argv("--state-dir", str(state)),
        env={"ANTHROPIC_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint},
    )
    await host.initialize()
    runs: dict[str, str] = {}
    try:
        (work / "notes.txt").write_text(FILE_TEXT)
        coder = await create(
            host,
            llm_config(
                sim,
                "anthropic",
                name="coder",
                tools=["file_read", "file_write"],
                cwd=str(work),
                permissions=[{"tool": "file_write", "action": "deny"}],
            ),
        )
        sim.script(
            Reply(
                content=[
                    tool_use("call_1", "file_read", path="notes.txt"),
                    tool_use("call_2", "file_write", path="out.txt", content="x"),
                ],
                usage=FIRST_USAGE,
            ),
            Reply.text(ANSWER, usage=SECOND_USAGE),
        )
        result = await host.request("agent/prompt", {"agentId": coder, "input": PROMPT})
        assert result["success"], result
        runs["tools"] = result["identity"]["runId"]

        given = summaries(sim)
        history = [
            message
            for number in range(3)
            for message in (
                user(text(f"question {number}: {WORDS}")),
                assistant(text(f"answer {number}: {WORDS}")),
            )
        ]
        compactor = await create(
            host, llm_config(sim, "anthropic", name="compactor", history=history)
        )
        sim.script(too_long_fault("anthropic"), Reply.text("answered at last"))
        result = await host.request("agent/prompt", {"agentId": compactor, "input": "one more"})
        assert result["success"], result
        runs["compaction"] = result["identity"]["runId"]
        summary_requests = len(given)
        sim.responder = None

        echo = {
            "name": "helper",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", ECHO]},
        }
        await create(host, echo)
        lead = await create(
            host,
            llm_config(
                sim,
                "anthropic",
                name="lead",
                delegates=["helper"],
                permissions=[{"tool": "delegate", "action": "allow"}],
            ),
        )
        sim.script(
            reply(tool_use("d1", "delegate", agent="helper", task="say hi")),
            Reply.text("delegated"),
        )
        result = await host.request("agent/run", {"agentId": lead, "input": "hand it on"})
        assert result["success"], result
        runs["delegation"] = result["identity"]["runId"]

        worker = {
            "name": "echoer",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", ECHO]},
        }
        tasks = [
            {"id": "a", "title": "A", "description": "first", "assignee": "echoer"},
            {"id": "b", "title": "B", "description": "second", "dependsOn": ["a"]},
        ]
        params = {"team": {"agents": [worker]}, "tasks": tasks, "runId": "team-1"}
        result = await host.request("oma/runTasks", params)
        assert result["success"], result
        runs["team"] = "team-1"
    finally:
        # The last run's spans are still queued: shutdown and exit flush them.
        assert await host.close() == 0
    stderr = await host.stderr_text()
    return Exported(collector.spans, collector.raw, runs, state, stderr, summary_requests)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exported]:
    state = tmp_path_factory.mktemp("otel-state")
    work = tmp_path_factory.mktemp("otel-work")
    with Simulator() as sim, Receiver() as collector:
        yield asyncio.run(_make_runs(sim, collector, state, work))


def tree(spans: list[ReceivedSpan], root: ReceivedSpan) -> list[tuple[int, str]]:
    return [(depth, span.name) for depth, span in iter_tree(spans, root)]


def root_of(spans: list[ReceivedSpan]) -> ReceivedSpan:
    (root,) = [span for span in spans if span.parent_id is None]
    return root


def test_a_run_with_two_tool_calls_is_one_trace_of_genai_spans(exported: Exported) -> None:
    spans = trace_of(exported.spans, exported.runs["tools"])
    root = root_of(spans)
    assert tree(spans, root) == [
        (0, "invoke_agent coder"),
        (1, "chat sim-1"),
        (1, "execute_tool file_read"),
        (1, "execute_tool file_write"),
        (1, "chat sim-1"),
    ]
    assert root.attributes == {
        **root.attributes,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "coder",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "sim-1",
        "oma.backend": "llm",
        "oma.run.id": exported.runs["tools"],
        "oma.turns": 2,
        # Every input token, cached ones included (5 + 1500 + 9 + 40 + 1500).
        "gen_ai.usage.input_tokens": 3054,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.usage.cache_read.input_tokens": 1500,
        "gen_ai.usage.cache_creation.input_tokens": 1540,
    }
    assert (root.kind, root.status_code) == (1, 1)  # INTERNAL, OK
    first, second = by_operation(spans, "chat")
    assert (first.kind, second.kind) == (3, 3)  # CLIENT
    assert first.attributes == {
        **first.attributes,
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "sim-1",
        "gen_ai.response.finish_reasons": ["tool_use"],
        "gen_ai.usage.input_tokens": 1505,
        "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.cache_creation.input_tokens": 1500,
    }
    assert "gen_ai.usage.cache_read.input_tokens" not in first.attributes
    assert second.attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert second.attributes["gen_ai.usage.cache_read.input_tokens"] == 1500
    read, write = by_operation(spans, "execute_tool")
    assert read.attributes == {
        **read.attributes,
        "gen_ai.tool.name": "file_read",
        "gen_ai.tool.call.id": "call_1",
        "oma.permission.decision": "allow",
        "oma.permission.by": "default",
    }
    assert read.status_code == 1
    assert write.attributes == {
        **write.attributes,
        "gen_ai.tool.name": "file_write",
        "gen_ai.tool.call.id": "call_2",
        "oma.permission.decision": "deny",
        "oma.permission.by": "rule",
    }
    assert (write.status_code, write.status_message) == (2, "permission_denied")
    for span in spans:
        assert span.start_ns <= span.end_ns
        assert span.scope == "oma-host"
        assert span.resource["service.name"] == "oma-host"
        assert span.resource["service.version"] == __version__
        assert span.resource["telemetry.sdk.name"] == "opentelemetry"


def test_the_exported_trace_is_the_one_runs_export_writes(exported: Exported) -> None:
    """The ids go out as the host made them: a trace a collector shows is
    the one ``oma-host runs export`` writes from the state directory."""
    done = subprocess.run(
        [*RUNS, "--state-dir", str(exported.state), "export", exported.runs["tools"]],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    written = json.loads(done.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans = trace_of(exported.spans, exported.runs["tools"])
    assert sorted(
        (s["traceId"], s["spanId"], s.get("parentSpanId"), s["name"]) for s in written
    ) == (sorted((s.trace_id, s.span_id, s.parent_id, s.name) for s in spans))


def test_a_compaction_is_under_its_run_with_its_summary_request(exported: Exported) -> None:
    spans = trace_of(exported.spans, exported.runs["compaction"])
    root = root_of(spans)
    (compaction,) = by_operation(spans, "compaction")
    assert compaction.parent_id == root.span_id
    assert compaction.attributes["oma.compaction.trigger"] == "too_long"
    before = compaction.attributes["oma.compaction.messages_before"]
    assert before > compaction.attributes["oma.compaction.messages_after"]
    # One chat span per summary request the provider answered.
    summarising = children(spans, compaction)
    assert [span.operation for span in summarising] == ["chat"] * exported.summary_requests
    assert exported.summary_requests >= 1
    failed = next(span for span in children(spans, root) if span.operation == "chat")
    assert failed.status_code == 2 and failed.attributes["error.type"] == "context_too_long"


def test_a_delegation_nests_the_delegates_run_under_the_delegate_call(
    exported: Exported,
) -> None:
    spans = trace_of(exported.spans, exported.runs["delegation"])
    assert tree(spans, root_of(spans)) == [
        (0, "invoke_agent lead"),
        (1, "chat sim-1"),
        (1, "execute_tool delegate"),
        (2, "delegation helper"),
        (3, "invoke_agent helper"),
        (1, "chat sim-1"),
    ]
    (delegation,) = by_operation(spans, "delegation")
    assert delegation.attributes["oma.delegation.agent"] == "helper"
    helper = children(spans, delegation)[0]
    assert helper.attributes["oma.backend"] == "process"
    assert "gen_ai.provider.name" not in helper.attributes


def test_a_team_run_has_its_tasks_under_one_workflow_span(exported: Exported) -> None:
    spans = trace_of(exported.spans, "team-1")
    root = root_of(spans)
    assert root.attributes == {
        **root.attributes,
        "gen_ai.operation.name": "invoke_workflow",
        "oma.team.method": "oma/runTasks",
        "oma.team.tasks": 2,
        "oma.run.id": "team-1",
    }
    tasks = {span.attributes["oma.task.id"]: span for span in children(spans, root)}
    assert set(tasks) == {"a", "b"}
    assert tasks["b"].attributes["oma.task.depends_on"] == ["a"]
    for task in tasks.values():
        assert task.attributes["oma.task.status"] == "completed"
        assert [child.name for child in children(spans, task)] == ["invoke_agent echoer"]


def test_no_key_and_no_message_text_is_exported(exported: Exported) -> None:
    assert exported.raw  # something was received
    for marker in (KEY, "PROMPT-MARKER", "FILE-CONTENT-MARKER", "ANSWER-MARKER", "notes.txt"):
        assert marker.encode() not in exported.raw, marker
        assert marker not in exported.stderr, marker
    names = {key for span in exported.spans for key in span.attributes}
    assert not names & {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
