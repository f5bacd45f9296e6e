"""The host's SQLite database: its file, tables, added columns, and the rows a finished run becomes.

Shared by the writer (:mod:`.store`), both doors and the read-only reader
(:mod:`.run_records`), so they agree on every column;
:func:`add_missing_columns` brings an older database up to date.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from oma_host.core.spans import COST_USD, OP_CHAT, CollectedSpans, Span

DB_NAME = "oma-host.sqlite3"
MEMORY = ":memory:"

# Every table and index, made when missing (no statement holds a ";": the
# store runs them one by one).
SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    agent_name TEXT NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS session_messages (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    message TEXT NOT NULL,
    checkpoint TEXT,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    agent TEXT NOT NULL,
    method TEXT NOT NULL,
    status TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    started REAL NOT NULL,
    finished REAL NOT NULL,
    duration_ms REAL NOT NULL,
    session_id TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started);
CREATE TABLE IF NOT EXISTS run_spans (
    span_id TEXT PRIMARY KEY,
    trace_id TEXT NOT NULL,
    parent_id TEXT,
    run_id TEXT,
    operation TEXT NOT NULL,
    name TEXT NOT NULL,
    start_ns INTEGER NOT NULL,
    end_ns INTEGER NOT NULL,
    status TEXT NOT NULL,
    attributes TEXT NOT NULL,
    local TEXT
);
CREATE INDEX IF NOT EXISTS run_spans_trace ON run_spans(trace_id);
CREATE TABLE IF NOT EXISTS evaluation_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    scorer TEXT NOT NULL,
    score REAL,
    reason TEXT,
    input TEXT,
    output TEXT,
    created REAL NOT NULL,
    metadata TEXT
);
CREATE INDEX IF NOT EXISTS evaluation_records_run ON evaluation_records(run_id);
CREATE TABLE IF NOT EXISTS backend_sessions (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    backend_session TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_info (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    cwd TEXT NOT NULL,
    title TEXT,
    settings TEXT NOT NULL
);
"""


# Columns added to ``runs`` after its first version, with their types: a
# database made before them gets them when a host opens it (ALTER TABLE).
ADDED_RUN_COLUMNS = (
    ("turns", "INTEGER"),
    ("cost_usd", "REAL"),
    ("error_kind", "TEXT"),
    ("error", "TEXT"),
    ("model", "TEXT"),
    ("trace_id", "TEXT"),
    ("cache_read_tokens", "INTEGER"),
    ("cache_creation_tokens", "INTEGER"),
)

# Columns added to ``session_messages``: the checkpoint of the workspace
# recorded before the turn a user message starts (docs/security.md, "Checkpoints").
ADDED_MESSAGE_COLUMNS = (("checkpoint", "TEXT"),)


class RunTrace(NamedTuple):
    """One run's trace, a row of ``runs`` in its column order (a tuple: a
    burst of runs makes many), as the doors write it and ``oma-host runs``
    reads it back. The fields after ``session_id`` came later and may be
    left out (and read back as None from an older database)."""

    run_id: str
    agent: str
    method: str
    status: str
    input_tokens: int
    output_tokens: int
    started: float
    finished: float
    duration_ms: float
    session_id: str | None
    turns: int | None = None
    cost_usd: float | None = None
    error_kind: str | None = None
    error: str | None = None  # the status message of a run that did not succeed
    model: str | None = None
    trace_id: str | None = None  # its spans' trace (run_spans)
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The run as JSON (``runs list --json``, the run viewer): camelCase keys."""
        return {
            "runId": self.run_id,
            "agent": self.agent,
            "method": self.method,
            "status": self.status,
            "started": self.started,
            "finished": self.finished,
            "durationMs": self.duration_ms,
            "inputTokens": self.input_tokens,
            "outputTokens": self.output_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheCreationTokens": self.cache_creation_tokens,
            "turns": self.turns,
            "costUsd": self.cost_usd,
            "errorKind": self.error_kind,
            "error": self.error,
            "model": self.model,
            "sessionId": self.session_id,
            "traceId": self.trace_id,
        }


RUN_COLUMNS = RunTrace._fields
# A span as ``run_spans`` keeps it, in its column order.
SpanRow = tuple[str, str, str | None, str | None, str, str, int, int, str, str, str | None]
SPAN_COLUMNS = (
    "span_id",
    "trace_id",
    "parent_id",
    "run_id",
    "operation",
    "name",
    "start_ns",
    "end_ns",
    "status",
    "attributes",
    "local",
)


def span_row(span: Span) -> SpanRow:
    """The row of ``run_spans`` that keeps ``span`` (its attributes and
    local part as JSON)."""
    return (
        span.span_id,
        span.trace_id,
        span.parent_id,
        span.run_id,
        span.operation,
        span.name,
        span.start_ns,
        span.start_ns if span.end_ns is None else span.end_ns,
        span.status,
        json.dumps(span.attributes, ensure_ascii=False),
        json.dumps(span.local, ensure_ascii=False) if span.local else None,
    )


# -- a finished run's rows ---------------------------------------------------------
# What a door writes when a run ends: the run's row of ``runs``, built from its
# result, and the rows of the spans it recorded. Each door writes them off the
# request's path (the JSON-RPC door in batches, ``server/trace_batch.py``; the
# ACP door after the turn's answer, ``acp_server/run_traces.py``).


def _turns(result: Mapping[str, Any]) -> int:
    """The provider replies of a run (an agent's assistant messages), or
    of a team run's tasks."""
    if "messages" in result:
        return sum(1 for message in result["messages"] if message.get("role") == "assistant")
    return sum(_turns(task["result"]) for task in result.get("tasks", []) if "result" in task)


def _cost(result: Mapping[str, Any], spans: CollectedSpans | None) -> float | None:
    """The run's cost: its result's, else (a team run) what its recorded
    provider requests cost; None when nothing priced it."""
    if "cost" in result:
        return float(result["cost"]["amount"])
    if spans is None:
        return None
    costs = [
        cost
        for span in spans.spans
        if span.operation == OP_CHAT
        and isinstance(cost := span.attributes.get(COST_USD), int | float)
    ]
    return round(sum(costs), 8) if costs else None


# The most tasks a team run's stored error names one by one.
_TASKS_NAMED = 8


def _team_error(result: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """Why a team run that did not succeed failed, when its result has no
    ``errorInfo`` to say so: its failed tasks, then its skipped ones, each
    with its reason ("task b failed: invalid x-api-key; task c skipped:
    dependency 'b' did not complete"), and the kind of the first failed
    task's run (``task_failed`` when it has none; ``task_skipped`` when
    no task failed, the budget being spent). With every task
    completed, it was ``oma/runTeam``'s final answer that failed (its
    error text is the run's ``output``)."""
    if result.get("success", True) or "tasks" not in result or result.get("errorInfo"):
        return None
    tasks = result["tasks"]
    failed = [task for task in tasks if task.get("status") == "failed"]
    skipped = [task for task in tasks if task.get("status") == "skipped"]
    said = [
        f"task {task['id']} {task['status']}: {task.get('reason') or 'no reason given'}"
        for task in (failed + skipped)[:_TASKS_NAMED]
    ]
    if len(failed) + len(skipped) > _TASKS_NAMED:
        said.append(f"and {len(failed) + len(skipped) - _TASKS_NAMED} more")
    if not said:
        return None, f"the final answer failed: {result.get('output') or 'no reason given'}"
    kinds = [
        str(task["result"]["errorInfo"]["kind"])
        for task in failed
        if isinstance(task.get("result"), Mapping) and task["result"].get("errorInfo")
    ]
    kind = kinds[0] if kinds else "task_failed" if failed else "task_skipped"
    return kind, "; ".join(said)


def run_record(
    result: Mapping[str, Any],
    *,
    agent: str,
    method: str,
    status: str,
    started: float,
    session_id: str | None,
    spans: CollectedSpans | None,
) -> tuple[RunTrace, list[SpanRow]]:
    """The row of ``runs`` for a run that ended now with ``result`` (an
    AgentRunResult or a team result), and its spans' rows. A failed team
    run's error and kind say which tasks failed or were skipped, and why."""
    finished = time.time()
    usage = result["tokenUsage"]
    error_info = result.get("errorInfo")
    message = result.get("status", {}).get("message") if status != "ok" else None
    error_kind = None if error_info is None else str(error_info["kind"])
    team_error = _team_error(result) if status == "error" else None
    if team_error is not None:
        error_kind, message = team_error
    trace = RunTrace(
        run_id=result["identity"]["runId"],
        agent=agent,
        method=method,
        status=status,
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        started=started,
        finished=finished,
        duration_ms=round((finished - started) * 1000, 3),
        session_id=session_id,
        turns=_turns(result),
        cost_usd=_cost(result, spans),
        error_kind=error_kind,
        error=message or (None if error_info is None else str(error_info["message"])),
        model=result.get("model"),
        trace_id=None if spans is None else spans.trace_id,
        cache_read_tokens=usage.get("cache_read_input_tokens"),
        cache_creation_tokens=usage.get("cache_creation_input_tokens"),
    )
    rows = [] if spans is None else [span_row(span) for span in spans.spans]
    return trace, rows


def add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring ``runs`` and ``session_messages`` of a database made by an
    earlier version up to date."""
    added = (("runs", ADDED_RUN_COLUMNS), ("session_messages", ADDED_MESSAGE_COLUMNS))
    for table, columns in added:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for column, kind in columns:
            if column not in have:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def default_state_dir() -> Path:
    """Where the database is when no state directory is given."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oma-host"
