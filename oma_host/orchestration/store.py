"""Persistent state in SQLite (WAL): sessions, run traces and evaluation records.

One file in a private state directory. A completed ``agent/prompt`` turn is
committed, fully synced, before its response is sent, so a host killed mid-turn
loses only the turn in flight. Secrets are never written: configs are not
stored and messages pass through the agent's redactor. Several hosts on one
machine may share the directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oma_host.core.messages import LLMMessage
from oma_host.core.places import private_folder
from oma_host.orchestration.store_schema import (
    DB_NAME,
    MEMORY,
    RUN_COLUMNS,
    SCHEMA,
    SPAN_COLUMNS,
    RunTrace,
    SpanRow,
    add_missing_columns,
    default_state_dir,
)

# How long a write waits for another connection's (another host's) to end.
BUSY_TIMEOUT_S = 30.0

# A session id used as it is in a file name.
_PLAIN_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")

# Applied to each message (as JSON data) before it is stored.
Redact = Callable[[Any], Any]

_INSERT_RUN = (
    f"INSERT OR REPLACE INTO runs ({', '.join(RUN_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in RUN_COLUMNS)})"
)
_INSERT_SPAN = (
    f"INSERT OR REPLACE INTO run_spans ({', '.join(SPAN_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in SPAN_COLUMNS)})"
)


def _unchanged(value: Any) -> Any:
    return value


def _switch_to_wal(db: sqlite3.Connection) -> None:
    """Put the database in WAL mode. Two connections doing this to a new
    database at once can deadlock, and SQLite then answers "database is
    locked" at once, without waiting: so wait here, and try again."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _history(db: sqlite3.Connection, session_id: str) -> list[LLMMessage] | None:
    """A session's stored messages, or None if it was never created."""
    if db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone() is None:
        return None
    rows = db.execute(
        "SELECT message FROM session_messages WHERE session_id = ? ORDER BY seq", (session_id,)
    ).fetchall()
    return [json.loads(row[0]) for row in rows]


class Store:
    """The host's database. Thread-safe (one connection behind a lock)."""

    def __init__(self, state_dir: str | os.PathLike[str] | None = None) -> None:
        # The state directory (None: an in-memory database, which has none).
        self.directory: str | None = None
        if str(state_dir) == MEMORY:
            self.path = MEMORY
        else:
            directory = Path(state_dir) if state_dir else default_state_dir()
            self.directory = str(directory)
            private_folder(str(directory), create=True)  # FolderError: whose, or a link
            self.path = str(directory / DB_NAME)
            # Made 0600 before SQLite opens it: its -wal and -shm files take its mode.
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=BUSY_TIMEOUT_S
        )
        self._db.execute("PRAGMA foreign_keys = ON")
        if self.path != MEMORY:
            _switch_to_wal(self._db)
            self._db.execute("PRAGMA synchronous = FULL")
        # In a write transaction from the start: reading the schema, then
        # writing it, fails at once if another host wrote in between.
        with self._transaction() as db:
            for statement in filter(str.strip, SCHEMA.split(";")):  # none holds a ";"
                db.execute(statement)
            add_missing_columns(db)

    @contextmanager
    def _transaction(self, synced: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction; ``synced=False`` commits without the fsync
        (``synchronous = NORMAL``: in WAL mode a crash of the host loses
        nothing, a power cut what was not yet written back)."""
        with self._lock:
            relaxed = not synced and self.path != MEMORY
            if relaxed:
                self._db.execute("PRAGMA synchronous = NORMAL")
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            finally:
                if relaxed:
                    self._db.execute("PRAGMA synchronous = FULL")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- sessions -----------------------------------------------------------

    def load_session(self, session_id: str) -> list[LLMMessage] | None:
        """The stored history of a session, or None if it was never created."""
        with self._lock:
            return _history(self._db, session_id)

    def create_session(
        self,
        session_id: str,
        agent_name: str,
        messages: Sequence[LLMMessage],
        redact: Redact = _unchanged,
    ) -> list[LLMMessage] | None:
        """Store a new session holding ``messages``; None. If it exists
        already (another host created it a moment ago), nothing is written
        and its stored history is returned."""
        now = time.time()
        with self._transaction() as db:
            created = db.execute(
                "INSERT INTO sessions (session_id, agent_name, created, updated) "
                "VALUES (?, ?, ?, ?) ON CONFLICT(session_id) DO NOTHING",
                (session_id, agent_name, now, now),
            ).rowcount
            if not created:
                return _history(db, session_id)
            self._append(db, session_id, messages, redact, start=0)
            return None

    def session_checkpoints(self, session_id: str) -> list[str | None]:
        """The checkpoint beside each stored message of a session, in order
        (None for most: only a turn's first message has one)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT checkpoint FROM session_messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            ).fetchall()
        return [row[0] for row in rows]

    def checkpoint_repository(self, session_id: str) -> str | None:
        """Where a session's workspace checkpoints are kept: the shadow git
        repository ``checkpoints/<id>.git`` of the state directory (an id
        of other characters than letters, digits, ``_`` and ``-`` named by
        its SHA-256); None for an in-memory store."""
        if self.directory is None:
            return None
        name = session_id
        if not _PLAIN_ID.fullmatch(session_id):
            name = hashlib.sha256(session_id.encode()).hexdigest()
        return os.path.join(self.directory, "checkpoints", f"{name}.git")

    def append_turn(
        self,
        session_id: str,
        messages: Sequence[LLMMessage],
        redact: Redact = _unchanged,
        marks: Sequence[str | None] = (),
    ) -> None:
        """Append one completed turn (user message and reply) atomically,
        each message with its mark (a checkpoint, or None) when given."""
        with self._transaction() as db:
            row = db.execute(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM session_messages WHERE session_id = ?",
                (session_id,),
            ).fetchone()
            self._append(db, session_id, messages, redact, start=int(row[0]), marks=marks)
            db.execute(
                "UPDATE sessions SET updated = ? WHERE session_id = ?", (time.time(), session_id)
            )

    def replace_history(
        self,
        session_id: str,
        messages: Sequence[LLMMessage],
        redact: Redact = _unchanged,
        marks: Sequence[str | None] = (),
    ) -> None:
        """Store ``messages`` as the session's whole history, atomically (a
        compaction: the summary and the turns it kept; a rewind: the turns
        kept), each with its mark when given."""
        with self._transaction() as db:
            db.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
            self._append(db, session_id, messages, redact, start=0, marks=marks)
            db.execute(
                "UPDATE sessions SET updated = ? WHERE session_id = ?", (time.time(), session_id)
            )

    def clear_session(self, session_id: str) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM session_messages WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM backend_sessions WHERE session_id = ?", (session_id,))

    def delete_session(self, session_id: str) -> bool:
        """Forget a session: its history, its backend's session id and its
        info (its run traces stay, as records of what ran). False when there
        was no such session."""
        with self._transaction() as db:
            for table in ("session_messages", "backend_sessions", "session_info"):
                db.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            gone = db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
            return gone.rowcount > 0

    @staticmethod
    def _append(
        db: sqlite3.Connection,
        session_id: str,
        messages: Sequence[LLMMessage],
        redact: Redact,
        start: int,
        marks: Sequence[str | None] = (),
    ) -> None:
        db.executemany(
            "INSERT INTO session_messages (session_id, seq, message, checkpoint) "
            "VALUES (?, ?, ?, ?)",
            [
                (
                    session_id,
                    start + offset,
                    json.dumps(redact(message)),
                    marks[offset] if offset < len(marks) else None,
                )
                for offset, message in enumerate(messages)
            ],
        )

    # -- the session an external backend keeps (an ACP agent's sessionId) ---

    def backend_session(self, session_id: str) -> str | None:
        """The id the session's backend gave its own session, if one was stored."""
        with self._lock:
            row = self._db.execute(
                "SELECT backend_session FROM backend_sessions WHERE session_id = ?", (session_id,)
            ).fetchone()
        return None if row is None else str(row[0])

    def put_backend_session(self, session_id: str, backend_session: str | None) -> None:
        """Store (None: forget) the backend's session id; a session never
        created has nothing to keep it with, and is left alone."""
        with self._transaction() as db:
            if backend_session is None:
                db.execute("DELETE FROM backend_sessions WHERE session_id = ?", (session_id,))
                return
            db.execute(
                "INSERT INTO backend_sessions (session_id, backend_session) SELECT ?, ? "
                "WHERE EXISTS (SELECT 1 FROM sessions WHERE session_id = ?) "
                "ON CONFLICT(session_id) DO UPDATE SET backend_session = excluded.backend_session",
                (session_id, backend_session, session_id),
            )

    # -- session info (the ACP door's: cwd, title, chosen agent and model) ----

    def put_session_info(
        self, session_id: str, cwd: str, settings: dict[str, Any], title: str | None = None
    ) -> None:
        """Record a session's cwd and settings; a title, once set, is kept."""
        with self._transaction() as db:
            db.execute(
                "INSERT INTO session_info (session_id, cwd, title, settings) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(session_id) DO UPDATE SET cwd = excluded.cwd, settings = "
                "excluded.settings, title = COALESCE(session_info.title, excluded.title)",
                (session_id, cwd, title, json.dumps(settings)),
            )

    def session_infos(
        self, session_id: str | None = None, cwd: str | None = None
    ) -> list[dict[str, Any]]:
        """Sessions that have info (one, or those in ``cwd``, or all), the most
        recently updated first: ``{sessionId, cwd, title, settings, updated}``."""
        query = (
            "SELECT i.session_id, i.cwd, i.title, i.settings, s.updated FROM session_info i "
            "JOIN sessions s ON s.session_id = i.session_id WHERE (? IS NULL OR i.session_id = ?) "
            "AND (? IS NULL OR i.cwd = ?) ORDER BY s.updated DESC"
        )
        with self._lock:
            rows = self._db.execute(query, (session_id, session_id, cwd, cwd)).fetchall()
        return [
            {
                "sessionId": row[0],
                "cwd": row[1],
                "title": row[2],
                "settings": json.loads(row[3]),
                "updated": row[4],
            }
            for row in rows
        ]

    # -- run traces -----------------------------------------------------------

    def record_runs(
        self, traces: Sequence[RunTrace | tuple[Any, ...]], spans: Sequence[SpanRow] = ()
    ) -> None:
        """Several traces and their spans in one transaction, not synced to
        disk at once: a trace records what happened, it is no promise to a
        client (a turn is). It reaches the disk with the next synced commit
        or checkpoint (closing the store checkpoints), or the system's own
        writeback. A trace given as a plain tuple of the first ten columns
        leaves the later ones empty."""
        with self._transaction(synced=False) as db:
            db.executemany(_INSERT_RUN, [RunTrace(*trace) for trace in traces])
            if spans:
                db.executemany(_INSERT_SPAN, spans)

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
