"""``oma-host runs list|show|export`` against a state directory made by real
runs of a real ``oma-host`` (the provider simulator answering): a prompt
turn with two tool calls, a failed run, a cancelled one, a delegation, a
compaction, a team run and an evaluated one-off run; each read back by
the ``oma-host runs`` command itself, in a process of its own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.script import Fault, Reply
from oma_host.testing.simulator import Simulator, too_long_fault
from tests.builders import assistant, text, user
from tests.llm.compaction_helpers import summaries
from tests.providers.helpers import llm_config

KEY = "sk-ant-api03-runs-test-key-DO-NOT-LEAK-31"
PROMPT = "What do the notes say? PROMPT-MARKER-7f3a"
FILE_TEXT = "FILE-CONTENT-MARKER-41 the answer is 42\n"
WORDS = "the quick brown fox jumps over the lazy dog " * 6
ECHO = 'printf "done: "; cat'


def _tool_use(call_id: str, path: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "file_read", "input": {"path": path}}


def _history(turns: int) -> list[dict[str, Any]]:
    return [
        message
        for number in range(turns)
        for message in (
            user(text(f"question {number}: {WORDS}")),
            assistant(text(f"answer {number}: {WORDS}")),
        )
    ]


async def _create(host: HostClient, config: dict[str, Any], session: str | None = None) -> str:
    params: dict[str, Any] = {"config": config}
    if session is not None:
        params["sessionId"] = session
    agent_id: str = (await host.request("agent/create", params))["agentId"]
    return agent_id


async def _make_runs(state: Path, work: Path, sim: Simulator) -> dict[str, str]:
    """Run everything the tests read; the run ids by what they were."""
    evaluation = {
        "sample": 1,
        "storePayloads": "redacted",
        "scorers": [{"kind": "contains", "text": "messages"}],
    }
    host = await HostClient.spawn(
        host_argv("--state-dir", str(state)), env={"ANTHROPIC_API_KEY": KEY}
    )
    await host.initialize({"evaluation": evaluation})
    runs: dict[str, str] = {}
    try:
        # Two tool calls in one turn of a stored session.
        (work / "notes.txt").write_text(FILE_TEXT)
        (work / "more.txt").write_text("more")
        coder = await _create(
            host,
            llm_config(sim, "anthropic", name="coder", tools=["file_read"], cwd=str(work)),
            session="sess-1",
        )
        sim.script(
            Reply(content=[_tool_use("call_1", "notes.txt"), _tool_use("call_2", "more.txt")]),
            Reply.text("It says 42."),
        )
        result = await host.request("agent/prompt", {"agentId": coder, "input": PROMPT})
        assert result["success"], result
        runs["tools"] = result["identity"]["runId"]

        # A run the provider refuses.
        failing = await _create(host, llm_config(sim, "anthropic", name="failing"))
        sim.script(Fault(401, "invalid x-api-key"))
        result = await host.request("agent/run", {"agentId": failing, "input": "hi"})
        assert not result["success"] and result["errorInfo"]["kind"] == "auth", result
        runs["failed"] = result["identity"]["runId"]

        # A run cancelled while it waits for the provider.
        slow = await _create(host, llm_config(sim, "anthropic", name="slow"))
        sim.script(Reply.text("too late", first_byte_delay_s=30))
        waiting = len(sim.requests)
        msg_id, answer = host.start_request(
            "agent/run", {"agentId": slow, "input": "wait", "runId": "run-cancelled"}
        )
        for _ in range(400):
            if len(sim.requests) > waiting:
                break
            await asyncio.sleep(0.025)
        host.cancel(msg_id)
        reply = await asyncio.wait_for(answer, 30)
        assert reply["error"]["code"] == -32800, reply
        runs["cancelled"] = "run-cancelled"

        # A delegation to a process agent.
        echo = {
            "name": "helper",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", ECHO]},
        }
        await _create(host, echo)
        lead_config = llm_config(
            sim,
            "anthropic",
            name="lead",
            delegates=["helper"],
            permissions=[{"tool": "delegate", "action": "allow"}],
        )
        lead = await _create(host, lead_config)
        call = {"agent": "helper", "task": "say hi"}
        sim.script(
            Reply(content=[{"type": "tool_use", "id": "d1", "name": "delegate", "input": call}]),
            Reply.text("delegated"),
        )
        result = await host.request("agent/run", {"agentId": lead, "input": "hand it on"})
        assert result["success"], result
        runs["delegation"] = result["identity"]["runId"]

        # A compaction after the provider says the conversation is too long.
        summaries(sim)
        compactor = await _create(
            host, llm_config(sim, "anthropic", name="compactor", history=_history(3))
        )
        sim.script(too_long_fault("anthropic"), Reply.text("answered at last"))
        result = await host.request("agent/prompt", {"agentId": compactor, "input": "one more"})
        assert result["success"], result
        runs["compaction"] = result["identity"]["runId"]
        sim.responder = None

        # A team run of process agents: b waits for a.
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

        # A one-off run, evaluated.
        config = {"name": "pinger", "provider": "test", "model": "echo"}
        result = await host.request("oma/runAgent", {"config": config, "input": "PONG"})
        runs["evaluated"] = result["identity"]["runId"]
        flushed = await host.request("oma/evaluation/flush", {"timeoutMs": 20000})
        assert flushed["settled"], flushed
    finally:
        assert await host.close() == 0
    return runs


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A state directory made by real runs, and their ids (made once for the module)."""
    state = tmp_path_factory.mktemp("runs-state")
    work = tmp_path_factory.mktemp("runs-work")
    with Simulator() as sim:
        runs = asyncio.run(_make_runs(state, work, sim))
    yield state, runs


def oma_runs(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``oma-host runs ARGS`` on ``state``, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "oma_host", "runs", "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def show_json(state: Path, run_id: str) -> dict[str, Any]:
    done = oma_runs(state, "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def flatten(nodes: list[dict[str, Any]], depth: int = 0) -> list[tuple[int, dict[str, Any]]]:
    found: list[tuple[int, dict[str, Any]]] = []
    for node in nodes:
        found.append((depth, node))
        found += flatten(node["children"], depth + 1)
    return found


def test_list_shows_every_run_newest_first_with_its_columns(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    done = oma_runs(state, "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert {row["runId"] for row in rows} == set(runs.values())
    assert [row["started"] for row in rows] == sorted((r["started"] for r in rows), reverse=True)
    by_id = {row["runId"]: row for row in rows}
    tools = by_id[runs["tools"]]
    assert (tools["agent"], tools["method"], tools["status"], tools["turns"]) == (
        "coder",
        "agent/prompt",
        "ok",
        2,
    )
    assert tools["inputTokens"] == 20 and tools["outputTokens"] == 10
    assert tools["sessionId"] == "sess-1" and tools["durationMs"] > 0
    assert tools["costUsd"] is None  # sim-1 has no price in any table
    failed = by_id[runs["failed"]]
    assert (failed["status"], failed["errorKind"]) == ("error", "auth")
    assert "invalid x-api-key" in failed["error"]
    assert by_id[runs["cancelled"]]["status"] == "cancelled"
    assert by_id[runs["team"]]["method"] == "oma/runTasks"
    table = oma_runs(state, "list")
    assert table.returncode == 0, table.stderr
    header, *lines = table.stdout.splitlines()
    assert header.split() == [
        "STARTED",
        "AGENT",
        "STATUS",
        "TURNS",
        "TOKENS",
        "COST",
        "DURATION",
        "RUN",
    ]
    assert len(lines) == len(runs)
    line = next(line for line in lines if runs["tools"] in line)
    assert line.split()[2:7] == ["coder", "ok", "2", "30", "-"]


def test_list_filters_by_agent_status_text_and_time(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded

    def listed(*args: str) -> set[str]:
        done = oma_runs(state, "list", "--json", *args)
        assert done.returncode == 0, done.stderr
        return {row["runId"] for row in json.loads(done.stdout)}

    assert listed("--agent", "coder") == {runs["tools"]}
    assert listed("--status", "cancelled") == {runs["cancelled"]}
    assert listed("--text", "X-API-KEY") == {runs["failed"]}  # the error, any case
    assert listed("--since", "1h") == set(runs.values())
    assert listed("--since", "2999-01-01") == set()
    today = time.strftime("%Y-%m-%d")
    assert listed("--since", today) == set(runs.values())
    bad = oma_runs(state, "list", "--since", "yesterday")
    assert bad.returncode == 2 and "--since wants an ISO date" in bad.stderr


def test_show_gives_the_turns_tool_calls_inputs_and_permissions_in_order(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    document = show_json(state, runs["tools"])
    assert document["run"]["runId"] == runs["tools"]
    spans = flatten(document["spans"])
    shape = [(depth, span["name"], span["status"]) for depth, span in spans]
    assert shape == [
        (0, "invoke_agent coder", "ok"),
        (1, "chat sim-1", "ok"),
        (1, "execute_tool file_read", "ok"),
        (1, "execute_tool file_read", "ok"),
        (1, "chat sim-1", "ok"),
    ]
    root = spans[0][1]["attributes"]
    assert root["gen_ai.operation.name"] == "invoke_agent"
    assert root["gen_ai.agent.name"] == "coder"
    assert root["gen_ai.provider.name"] == "anthropic"
    assert root["gen_ai.conversation.id"] == "sess-1"
    assert (root["gen_ai.usage.input_tokens"], root["gen_ai.usage.output_tokens"]) == (20, 10)
    assert root["oma.turns"] == 2
    chat = spans[1][1]["attributes"]
    assert chat["gen_ai.request.model"] == "sim-1"
    assert chat["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert (chat["gen_ai.usage.input_tokens"], chat["gen_ai.usage.output_tokens"]) == (10, 5)
    calls = [span for _, span in spans if span["operation"] == "execute_tool"]
    assert [c["attributes"]["gen_ai.tool.call.id"] for c in calls] == ["call_1", "call_2"]
    assert [c["stored"]["toolInput"] for c in calls] == [
        {"path": "notes.txt"},
        {"path": "more.txt"},
    ]
    for call in calls:
        assert call["attributes"]["oma.permission.decision"] == "allow"
        assert call["attributes"]["oma.permission.by"] == "default"
        # Content capture is off: the input is stored, not an attribute.
        assert "gen_ai.tool.call.arguments" not in call["attributes"]
    # The spans of one trace, each step within its parent's time.
    assert {span["traceId"] for _, span in spans} == {document["run"]["traceId"]}
    for _depth, span in spans[1:]:
        assert spans[0][1]["startNs"] <= span["startNs"] <= span["endNs"] <= spans[0][1]["endNs"]
    done = oma_runs(state, "show", runs["tools"])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"run {runs['tools']}  agent coder  agent/prompt  ok")
    tree = [line for line in lines if line.lstrip().startswith(("invoke_agent", "chat", "execute"))]
    assert [line[: len(line) - len(line.lstrip())] for line in tree] == ["", "  ", "  ", "  ", "  "]
    assert 'allow by default  input {"path": "notes.txt"}' in tree[2]
    assert "finish tool_use" in tree[1]


def test_show_gives_a_failed_and_a_cancelled_run_their_status_and_error(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    failed = flatten(show_json(state, runs["failed"])["spans"])
    assert [(s["name"], s["status"]) for _, s in failed] == [
        ("invoke_agent failing", "error"),
        ("chat sim-1", "error"),
    ]
    assert failed[0][1]["attributes"]["error.type"] == "auth"
    assert failed[1][1]["attributes"]["error.type"] == "auth"
    assert failed[1][1]["attributes"]["http.response.status_code"] == 401
    done = oma_runs(state, "show", runs["failed"])
    assert "error (auth): " in done.stdout and "error auth" in done.stdout
    cancelled = flatten(show_json(state, runs["cancelled"])["spans"])
    assert [(s["name"], s["status"]) for _, s in cancelled] == [
        ("invoke_agent slow", "cancelled"),
        ("chat sim-1", "cancelled"),
    ]


def test_show_puts_the_delegate_run_under_the_delegation_under_its_tool_call(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    spans = flatten(show_json(state, runs["delegation"])["spans"])
    shape = [(depth, span["name"]) for depth, span in spans]
    assert shape == [
        (0, "invoke_agent lead"),
        (1, "chat sim-1"),
        (1, "execute_tool delegate"),
        (2, "delegation helper"),
        (3, "invoke_agent helper"),
        (1, "chat sim-1"),
    ]
    helper = spans[4][1]
    assert helper["attributes"]["oma.backend"] == "process"
    assert helper["runId"] == f"{runs['delegation']}:d1"
    assert "gen_ai.conversation.id" not in helper["attributes"]


def test_show_gives_a_compaction_its_counts_and_its_summary_request(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    spans = flatten(show_json(state, runs["compaction"])["spans"])
    shape = [(depth, span["name"], span["status"]) for depth, span in spans]
    assert shape[0] == (0, "invoke_agent compactor", "ok")
    assert shape[1] == (1, "chat sim-1", "error")  # refused: too long
    assert shape[2] == (1, "compaction too_long", "ok")
    assert all(entry == (2, "chat sim-1", "ok") for entry in shape[3:-1])  # the summary
    assert len(shape) > 4 and shape[-1] == (1, "chat sim-1", "ok")
    compaction = spans[2][1]["attributes"]
    assert compaction["oma.compaction.strategy"] == "summarize"
    assert compaction["oma.compaction.messages_before"] == 7
    assert compaction["oma.compaction.messages_after"] < 7
    before = compaction["oma.compaction.tokens_before"]
    assert compaction["oma.compaction.tokens_after"] < before
    assert spans[1][1]["attributes"]["error.type"] == "context_too_long"


def test_show_gives_a_team_run_its_tasks_each_over_its_agent_run(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    document = show_json(state, runs["team"])
    spans = flatten(document["spans"])
    shape = [(depth, span["name"]) for depth, span in spans]
    assert shape == [
        (0, "invoke_workflow team"),
        (1, "task a"),
        (2, "invoke_agent echoer"),
        (1, "task b"),
        (2, "invoke_agent echoer"),
    ]
    team = spans[0][1]
    assert team["attributes"]["oma.team.method"] == "oma/runTasks"
    assert team["runId"] == "team-1"
    assert spans[3][1]["attributes"]["oma.task.depends_on"] == ["a"]
    assert [spans[i][1]["runId"] for i in (2, 4)] == ["team-1:a", "team-1:b"]
    assert document["run"]["turns"] == 2


def test_show_lists_a_run_s_evaluation_scores(recorded: tuple[Path, dict[str, str]]) -> None:
    state, runs = recorded
    document = show_json(state, runs["evaluated"])
    (record,) = document["evaluations"]
    assert (record["scorer"], record["score"]) == ("contains", 1.0)
    done = oma_runs(state, "show", runs["evaluated"])
    assert "evaluations\n  contains: 1" in done.stdout


def test_export_is_otlp_json_without_keys_or_message_text(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    done = oma_runs(state, "export", runs["tools"])
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    (resource,) = exported["resourceSpans"]
    attributes = {a["key"]: a["value"] for a in resource["resource"]["attributes"]}
    assert attributes["service.name"] == {"stringValue": "oma-host"}
    (scope,) = resource["scopeSpans"]
    assert scope["scope"]["name"] == "oma-host"
    spans = scope["spans"]
    assert len(spans) == 5
    by_id = {span["spanId"]: span for span in spans}
    for span in spans:
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        assert int(span["traceId"], 16) and int(span["spanId"], 16)
        assert isinstance(span["startTimeUnixNano"], str) and span["startTimeUnixNano"].isdigit()
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])
        assert span["status"] == {"code": 1}
        assert "parentSpanId" not in span or span["parentSpanId"] in by_id
    root = next(span for span in spans if "parentSpanId" not in span)
    assert root["kind"] == 1  # INTERNAL
    values = {a["key"]: a["value"] for a in root["attributes"]}
    assert values["gen_ai.operation.name"] == {"stringValue": "invoke_agent"}
    assert values["gen_ai.usage.input_tokens"] == {"intValue": "20"}
    chat = next(span for span in spans if span["name"].startswith("chat"))
    assert chat["kind"] == 3  # CLIENT
    reasons = {a["key"]: a["value"] for a in chat["attributes"]}["gen_ai.response.finish_reasons"]
    assert reasons == {"arrayValue": {"values": [{"stringValue": "tool_use"}]}}
    # No key, no message text, no tool input or output without content capture.
    for marker in (KEY, "PROMPT-MARKER", "FILE-CONTENT-MARKER", "notes.txt", "It says 42"):
        assert marker not in done.stdout
    cancelled = json.loads(oma_runs(state, "export", runs["cancelled"]).stdout)
    statuses = [s["status"] for s in cancelled["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    assert statuses == [{"code": 0}, {"code": 0}]  # UNSET, with oma.status cancelled


def test_an_unknown_run_or_a_missing_database_is_said_clearly(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, _runs = recorded
    for action in ("show", "export"):
        done = oma_runs(state, action, "run_nope")
        assert done.returncode == 2 and done.stdout == ""
        assert "no run 'run_nope'" in done.stderr and "oma-host runs list" in done.stderr
    empty = oma_runs(tmp_path, "list")
    assert empty.returncode == 1
    assert f"no runs recorded in {tmp_path}" in empty.stderr
    memory = oma_runs(Path(":memory:"), "list")
    assert memory.returncode == 1 and "':memory:' keeps nothing" in memory.stderr


def test_the_store_records_no_key_and_no_message_text_in_spans(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    import sqlite3

    state, _runs = recorded
    database = sqlite3.connect(state / "oma-host.sqlite3")
    rows = database.execute("SELECT name, attributes, local FROM run_spans").fetchall()
    database.close()
    dumped = json.dumps(rows)
    assert rows and KEY not in dumped
    for marker in ("PROMPT-MARKER", "FILE-CONTENT-MARKER", "It says 42"):
        assert marker not in dumped
