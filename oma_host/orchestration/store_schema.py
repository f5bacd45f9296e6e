"""What the host's SQLite database is: its file, tables, added columns and row shapes.

Shared by the writer (:mod:`.store`) and the read-only reader
(:mod:`.run_records`); :func:`add_missing_columns` brings an older database up
to date.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

from oma_host.core.spans import Span

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


def add_missing_columns(db: sqlite3.Connection) -> None:
    """Bring ``runs`` of a database made by an earlier version up to date."""
    have = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    for column, kind in ADDED_RUN_COLUMNS:
        if column not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {column} {kind}")


def default_state_dir() -> Path:
    """Where the database is when no state directory is given."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oma-host"
