"""Persistent state in SQLite (stdlib ``sqlite3``, WAL): conversation
sessions, run traces and evaluation records.

One file, ``oma-host.sqlite3``, in the state directory (``--state-dir``,
``initializationOptions.stateDir``, else ``$XDG_STATE_HOME/oma-host``, else
``~/.local/state/oma-host``); ``:memory:`` keeps everything in memory. A
completed ``agent/prompt`` turn is committed in one transaction before its
response is sent, with ``synchronous=FULL``, so a host killed mid-turn loses
only the turn in flight. Secrets are never written: configs are not stored,
and stored messages pass through the agent's redactor first (string by
string, so what is stored stays valid JSON).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oma_host.core.messages import LLMMessage

DB_NAME = "oma-host.sqlite3"
MEMORY = ":memory:"

_SCHEMA = """
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
"""


# Applied to each message (as JSON data) before it is stored.
Redact = Callable[[Any], Any]


def _unchanged(value: Any) -> Any:
    return value


def default_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "oma-host"


class Store:
    """The host's database. Thread-safe (one connection behind a lock)."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        if str(state_dir) == MEMORY:
            self.path = MEMORY
        else:
            directory = Path(state_dir) if state_dir else default_state_dir()
            directory.mkdir(parents=True, exist_ok=True)
            self.path = str(directory / DB_NAME)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA foreign_keys = ON")
        if self.path != MEMORY:
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
        self._db.executescript(_SCHEMA)

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- sessions -----------------------------------------------------------

    def load_session(self, session_id: str) -> list[LLMMessage] | None:
        """The stored history of a session, or None if it was never created."""
        with self._lock:
            known = self._db.execute(
                "SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
            if known is None:
                return None
            rows = self._db.execute(
                "SELECT message FROM session_messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [json.loads(row[0]) for row in rows]

    def create_session(
        self,
        session_id: str,
        agent_name: str,
        messages: Sequence[LLMMessage],
        redact: Redact = _unchanged,
    ) -> None:
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO sessions (session_id, agent_name, created, updated) "
                "VALUES (?, ?, ?, ?)",
                (session_id, agent_name, now, now),
            )
            self._append(db, session_id, messages, redact, start=0)

    def append_turn(
        self, session_id: str, messages: Sequence[LLMMessage], redact: Redact = _unchanged
    ) -> None:
        """Append one completed turn (user message and reply) atomically."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM session_messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            self._append(db, session_id, messages, redact, start=int(row[0]))
            db.execute(
                "UPDATE sessions SET updated = ? WHERE session_id = ?", (time.time(), session_id)
            )

    def clear_session(self, session_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))

    @staticmethod
    def _append(
        db: sqlite3.Connection,
        session_id: str,
        messages: Sequence[LLMMessage],
        redact: Redact,
        start: int,
    ) -> None:
        db.executemany(
            "INSERT INTO session_messages (session_id, seq, message) VALUES (?, ?, ?)",
            [
                (session_id, start + offset, json.dumps(redact(message)))
                for offset, message in enumerate(messages)
            ],
        )

    # -- run traces -----------------------------------------------------------

    def record_run(self, trace: dict[str, Any]) -> None:
        with self._transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs (run_id, agent, method, status, input_tokens, "
                "output_tokens, started, finished, duration_ms, session_id) "
                "VALUES (:run_id, :agent, :method, :status, :input_tokens, :output_tokens, "
                ":started, :finished, :duration_ms, :session_id)",
                trace,
            )

    # -- evaluation records ---------------------------------------------------

    def add_records(self, records: Sequence[dict[str, Any]]) -> None:
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO evaluation_records (run_id, agent, scorer, score, reason, input, "
                "output, created, metadata) VALUES (:runId, :agent, :scorer, :score, :reason, "
                ":input, :output, :createdAt, :metadata)",
                [{**r, "metadata": json.dumps(r.get("metadata") or {})} for r in records],
            )

    def records(self, run_id: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        query = (
            "SELECT id, run_id, agent, scorer, score, reason, input, output, created, metadata "
            "FROM evaluation_records"
        )
        params: tuple[Any, ...] = ()
        if run_id is not None:
            query += " WHERE run_id = ?"
            params = (run_id,)
        query += " ORDER BY id LIMIT ?"
        with self._lock:
            rows = self._db.execute(query, (*params, limit)).fetchall()
        return [
            {
                "id": row[0],
                "runId": row[1],
                "agent": row[2],
                "scorer": row[3],
                "score": row[4],
                "reason": row[5],
                "input": row[6],
                "output": row[7],
                "createdAt": row[8],
                "metadata": json.loads(row[9]) if row[9] else {},
            }
            for row in rows
        ]
