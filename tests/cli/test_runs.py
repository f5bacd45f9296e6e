"""``oma-host runs list|show|export`` against a state directory made by real
runs of a real ``oma-host`` (``recorded``: tests/cli/recorded_runs.py); each
read back by the ``oma-host runs`` command itself, in a process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.cli.recorded_runs import (
    CAPTURED_FILE,
    CAPTURED_PROMPT,
    CAPTURED_REPLY,
    CAPTURED_SECOND,
    KEY,
    flatten,
    oma_runs,
    show_json,
)


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
        "PROMPT",
    ]
    assert len(lines) == len(runs)
    line = next(line for line in lines if runs["tools"] in line)
    assert line.split()[2:7] == ["coder", "ok", "2", "30", "-"]
    assert line.endswith(f"{runs['tools']}  -")  # its text was not captured
    captured = next(line for line in lines if runs["captured"] in line)
    assert captured.endswith(f"{runs['captured']}  {CAPTURED_PROMPT}")


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


def test_a_failed_team_run_says_which_task_failed_and_why_and_which_was_skipped(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    state, runs = recorded
    listed = oma_runs(state, "list", "--json", "--text", "build-broke-marker")
    assert listed.returncode == 0, listed.stderr
    (row,) = json.loads(listed.stdout)
    assert (row["runId"], row["status"], row["errorKind"]) == (
        runs["team_failed"],
        "error",
        "process",
    )
    assert row["error"] == (
        "task build failed: sh exited with code 3: BUILD-BROKE-MARKER; "
        "task ship skipped: dependency 'build' did not complete"
    )
    document = show_json(state, runs["team_failed"])
    assert document["run"]["error"] == row["error"]
    spans = flatten(document["spans"])
    shape = [(depth, span["name"], span["status"]) for depth, span in spans]
    assert shape == [
        (0, "invoke_workflow team", "error"),
        (1, "task build", "error"),
        (2, "invoke_agent failer", "error"),
        (1, "task ship", "skipped"),
    ]
    build, ship = spans[1][1], spans[3][1]
    assert build["stored"]["taskReason"] == "sh exited with code 3: BUILD-BROKE-MARKER"
    assert ship["stored"]["taskReason"] == "dependency 'build' did not complete"
    assert ship["attributes"]["oma.task.status"] == "skipped"
    shown = oma_runs(state, "show", runs["team_failed"])
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert f"error (process): {row['error']}" in lines
    assert any(
        line.startswith("  task ship  skipped  ")
        and line.endswith("skipped (dependency 'build' did not complete)")
        for line in lines
    ), lines
    assert any("failed (sh exited with code 3: BUILD-BROKE-MARKER)" in line for line in lines)
    # Exported: the skipped task UNSET with oma.status, no reason (it is the host's own).
    exported = oma_runs(state, "export", runs["team_failed"])
    spans_out = exported_spans(exported.stdout)
    skipped = next(span for span in spans_out if span["name"] == "task ship")
    assert skipped["status"] == {"code": 0}
    assert {"key": "oma.status", "value": {"stringValue": "skipped"}} in skipped["attributes"]
    assert "BUILD-BROKE-MARKER" not in exported.stdout and "did not complete" not in exported.stdout


def exported_spans(text: str) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def test_a_host_capturing_content_with_no_export_records_the_conversation(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    """``telemetry: {export: false, captureContent: true}``: the turns' text
    is in the state directory's spans (the key redacted), and the listing
    gives each turn's prompt (the second turn's, not the first's it carries
    as its history) and finds a run by it."""
    state, runs = recorded
    listed = {row["runId"]: row for row in json.loads(oma_runs(state, "list", "--json").stdout)}
    assert listed[runs["captured"]]["prompt"] == CAPTURED_PROMPT
    assert listed[runs["captured_2"]]["prompt"] == CAPTURED_SECOND
    assert listed[runs["captured"]]["sessionId"] == "sess-captured"
    assert listed[runs["tools"]]["prompt"] is None  # not captured: no text kept
    assert all(row["sessionTitle"] is None for row in listed.values())  # no ACP session
    found = oma_runs(state, "list", "--json", "--text", "captured-prompt-5c")
    assert {row["runId"] for row in json.loads(found.stdout)} == {
        runs["captured"],
        runs["captured_2"],  # its input holds the first turn
    }
    spans = [span for _, span in flatten(show_json(state, runs["captured"])["spans"])]
    by_name = {span["name"]: span for span in spans}
    root = by_name["invoke_agent scribe"]["attributes"]
    assert CAPTURED_PROMPT in root["gen_ai.input.messages"]
    assert root["gen_ai.output.messages"] == CAPTURED_REPLY
    tool = by_name["execute_tool file_read"]["attributes"]
    assert json.loads(tool["gen_ai.tool.call.arguments"]) == {"path": "build.txt"}
    assert tool["gen_ai.tool.call.result"] == CAPTURED_FILE.replace(KEY, "[redacted]")
    assert KEY not in json.dumps(spans)


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


def _oma(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    """``oma-host ARGS`` in a process of its own, as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "oma_host", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )


def test_the_state_directory_may_be_given_before_or_after_the_action(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, runs = recorded
    expected = json.loads(oma_runs(state, "list", "--json").stdout)
    nowhere = str(tmp_path / "nowhere")
    for args in (
        ["runs", "list", "--state-dir", str(state), "--json"],
        ["runs", "list", "--json", "--state-dir", str(state)],
        ["--state-dir", str(state), "runs", "list", "--json"],
        # The last one given stands.
        [
            "--state-dir",
            nowhere,
            "runs",
            "--state-dir",
            nowhere,
            "list",
            "--state-dir",
            str(state),
            "--json",
        ],
    ):
        done = _oma(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert json.loads(done.stdout) == expected, args
    shown = _oma("runs", "show", runs["tools"], "--json", "--state-dir", str(state))
    assert shown.returncode == 0 and json.loads(shown.stdout)["run"]["runId"] == runs["tools"]
    exported = _oma("runs", "export", runs["tools"], "--state-dir", str(state))
    assert exported.returncode == 0 and "resourceSpans" in json.loads(exported.stdout)
    missing = _oma("--state-dir", str(state), "runs", "list", "--state-dir", nowhere)
    assert missing.returncode == 1 and f"no runs recorded in {nowhere}" in missing.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(
    recorded: tuple[Path, dict[str, str]],
) -> None:
    """``oma-host runs ... | head``: the reader closes the pipe; no traceback,
    status 141 (128 + SIGPIPE) as for any program a closed pipe ends."""
    state, runs = recorded
    for action in (
        ["list"],
        ["list", "--json"],
        ["show", runs["diamond"]],
        ["export", runs["tools"]],
    ):
        reading, writing = os.pipe()
        os.close(reading)  # gone before the first line is written
        try:
            done = _oma("runs", "--state-dir", str(state), *action, stdout=writing)
        finally:
            os.close(writing)
        assert (done.returncode, done.stderr) == (141, ""), action
    # Through a real ``head -n 1``: its first line, and nothing on stderr.
    with (
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oma_host",
                "runs",
                "--state-dir",
                str(state),
                "export",
                runs["diamond"],
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as runs_export,
        subprocess.Popen(
            ["head", "-n", "1"], stdin=runs_export.stdout, stdout=subprocess.PIPE
        ) as head,
    ):
        assert runs_export.stdout is not None and runs_export.stderr is not None
        runs_export.stdout.close()  # head holds the pipe's read end alone
        first, _ = head.communicate(timeout=60)
        assert first == b"{\n"
        assert runs_export.stderr.read() == b""
        assert runs_export.wait(timeout=60) in (0, 141)
