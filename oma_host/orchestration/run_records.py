"""Reading what the store recorded of runs, for ``oma-host runs`` and the run viewer.

Pure reads on a read-only connection: a reader never writes, migrates or holds
a lock a host would wait for, and a database made by an earlier version reads
as it is.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from oma_host.core.spans import INPUT_MESSAGES, Span
from oma_host.orchestration.store_schema import DB_NAME, MEMORY, RUN_COLUMNS, SPAN_COLUMNS, RunTrace

# The most of a prompt a run's listing carries.
PROMPT_CHARS = 300


class NoRunDatabase(FileNotFoundError):
    """The state directory holds no database (no host has used it)."""


@dataclass(slots=True)
class SpanNode:
    """A span and the spans under it, in the order they started."""

    span: Span
    children: list[SpanNode] = field(default_factory=list)

    def walk(self, depth: int = 0) -> Iterator[tuple[int, Span]]:
        """Each span of the subtree with its depth, parents first."""
        yield depth, self.span
        for child in self.children:
            yield from child.walk(depth + 1)

    def to_json(self) -> dict[str, Any]:
        return {**span_json(self.span), "children": [c.to_json() for c in self.children]}


def span_json(span: Span) -> dict[str, Any]:
    """A stored span as JSON (camelCase keys, ``local`` as ``stored``)."""
    return {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentId": span.parent_id,
        "runId": span.run_id,
        "operation": span.operation,
        "name": span.name,
        "startNs": span.start_ns,
        "endNs": span.end_ns,
        "status": span.status,
        "attributes": span.attributes,
        "stored": span.local,
    }


def span_tree(spans: Sequence[Span]) -> list[SpanNode]:
    """The spans as trees (a span whose parent is not among them is a
    root), each level in the order its spans started."""
    nodes = {span.span_id: SpanNode(span) for span in sorted(spans, key=lambda s: s.start_ns)}
    roots: list[SpanNode] = []
    for node in nodes.values():
        parent = None if node.span.parent_id is None else nodes.get(node.span.parent_id)
        (roots if parent is None else parent.children).append(node)
    return roots


def _text_of(content: Any) -> str:
    """A message's text: its string content, or its text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def prompt_of(input_messages: Any) -> str | None:
    """What a run was asked, from its captured ``gen_ai.input.messages``
    (the run's input; a session's turn carries the conversation before it):
    the text of its last user message that has any, whitespace folded, at
    most :data:`PROMPT_CHARS` characters. None when there is none, or the
    capture was cut before its end (a long conversation)."""
    if not isinstance(input_messages, str):
        return None
    try:
        messages = json.loads(input_messages)
    except ValueError:
        return None
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            text = " ".join(_text_of(message.get("content")).split())
            if text:
                return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"
    return None


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matching it anywhere, taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class RunRecords:
    """The runs a state directory's database recorded, read-only."""

    def __init__(self, state_dir: str | Path) -> None:
        if str(state_dir) == MEMORY:
            raise NoRunDatabase("':memory:' keeps nothing to read once its host has ended")
        path = Path(state_dir) / DB_NAME
        if not path.is_file():
            raise NoRunDatabase(f"no runs recorded in {state_dir}: {path} does not exist")
        self.path = path
        self._db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master")}
        self._has_spans = "run_spans" in tables
        self._has_evaluations = "evaluation_records" in tables
        self._has_session_info = "session_info" in tables
        have = {row[1] for row in self._db.execute("PRAGMA table_info(runs)")}
        # A column an older database lacks reads as NULL.
        self._run_columns = ", ".join(c if c in have else f"NULL AS {c}" for c in RUN_COLUMNS)

    def __enter__(self) -> RunRecords:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def list_runs(
        self,
        *,
        agent: str | None = None,
        since: float | None = None,
        status: str | None = None,
        text: str | None = None,
        limit: int = 100,
    ) -> list[RunTrace]:
        """The runs, newest first (at most ``limit``): of ``agent``, started
        at or after ``since`` (epoch seconds), with ``status``, and holding
        ``text`` (case-insensitive) in their run id, agent, model, session
        id, error, session title or captured input."""
        where: list[str] = []
        params: list[Any] = []
        if agent is not None:
            where.append("agent = ?")
            params.append(agent)
        if since is not None:
            where.append("started >= ?")
            params.append(since)
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if text:
            fields = ["run_id", "agent", "model", "error", "session_id"]
            if self._has_session_info:
                fields.append(
                    "(SELECT title FROM session_info i WHERE i.session_id = runs.session_id)"
                )
            if self._has_spans:
                fields.append(
                    "(SELECT json_extract(s.attributes, '$.\"" + INPUT_MESSAGES + "\"') "
                    "FROM run_spans s WHERE s.trace_id = runs.trace_id AND s.parent_id IS NULL "
                    "LIMIT 1)"
                )
            where.append("(" + " OR ".join(f"{f} LIKE ? ESCAPE '\\'" for f in fields) + ")")
            params.extend([_like(text)] * len(fields))
        query = f"SELECT {self._run_columns} FROM runs"
        if where:
            query += " WHERE " + " AND ".join(where)
        query += " ORDER BY started DESC LIMIT ?"
        return [RunTrace(*row) for row in self._db.execute(query, (*params, limit))]

    def runs_json(self, rows: Sequence[RunTrace]) -> list[dict[str, Any]]:
        """The runs as JSON (``runs list --json``, the run viewer's list):
        each run's fields, its ``prompt`` (what it was asked, when its text
        was captured: :func:`prompt_of`) and its ``sessionTitle`` (an ACP
        session's title), each null when the store holds none."""
        traces = sorted({row.trace_id for row in rows if row.trace_id is not None})
        prompts: dict[str, str] = {}  # by trace: its root span's (the run's)
        if self._has_spans and traces:
            marks = ", ".join("?" * len(traces))
            query = (
                "SELECT trace_id, json_extract(attributes, '$.\"" + INPUT_MESSAGES + "\"') "
                f"FROM run_spans WHERE parent_id IS NULL AND trace_id IN ({marks})"
            )
            for trace_id, captured in self._db.execute(query, traces):
                prompt = prompt_of(captured)
                if prompt is not None:
                    prompts[trace_id] = prompt
        titles: dict[str, str] = {}
        sessions = sorted({row.session_id for row in rows if row.session_id is not None})
        if self._has_session_info and sessions:
            marks = ", ".join("?" * len(sessions))
            query = f"SELECT session_id, title FROM session_info WHERE session_id IN ({marks})"
            titles = {sid: title for sid, title in self._db.execute(query, sessions) if title}
        return [
            {
                **row.to_json(),
                "prompt": None if row.trace_id is None else prompts.get(row.trace_id),
                "sessionTitle": None if row.session_id is None else titles.get(row.session_id),
            }
            for row in rows
        ]

    def agents(self) -> list[str]:
        """Every agent that has a run, sorted (the run viewer's filter choices)."""
        return [row[0] for row in self._db.execute("SELECT DISTINCT agent FROM runs ORDER BY 1")]

    def statuses(self) -> list[str]:
        """Every status a run ended with, sorted."""
        return [row[0] for row in self._db.execute("SELECT DISTINCT status FROM runs ORDER BY 1")]

    def run(self, run_id: str) -> RunTrace | None:
        """The run of that id, or None."""
        row = self._db.execute(
            f"SELECT {self._run_columns} FROM runs WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else RunTrace(*row)

    def spans(self, run: RunTrace) -> list[Span]:
        """The spans of the run's trace (its delegates' and tasks' runs
        included), in the order they started; none for a run recorded
        before spans were."""
        if not self._has_spans:
            return []
        columns = ", ".join(SPAN_COLUMNS)
        if run.trace_id is not None:
            query = f"SELECT {columns} FROM run_spans WHERE trace_id = ? ORDER BY start_ns"
            rows = self._db.execute(query, (run.trace_id,)).fetchall()
        else:
            query = f"SELECT {columns} FROM run_spans WHERE run_id = ? ORDER BY start_ns"
            rows = self._db.execute(query, (run.run_id,)).fetchall()
        return [_span(row) for row in rows]

    def span_tree(self, run: RunTrace) -> list[SpanNode]:
        """The run's spans as a tree (:func:`span_tree`)."""
        return span_tree(self.spans(run))

    def evaluations(self, run_id: str) -> list[dict[str, Any]]:
        """The run's evaluation records, oldest first: ``{scorer, score,
        reason, createdAt, metadata}``."""
        if not self._has_evaluations:
            return []
        rows = self._db.execute(
            "SELECT scorer, score, reason, created, metadata FROM evaluation_records "
            "WHERE run_id = ? ORDER BY id",
            (run_id,),
        ).fetchall()
        return [
            {
                "scorer": row[0],
                "score": row[1],
                "reason": row[2],
                "createdAt": row[3],
                "metadata": json.loads(row[4]) if row[4] else {},
            }
            for row in rows
        ]


def _span(row: Sequence[Any]) -> Span:
    (span_id, trace_id, parent_id, run_id, operation, name, start, end, status, attrs, local) = row
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        run_id=run_id,
        operation=operation,
        name=name,
        start_ns=start,
        end_ns=end,
        status=status,
        attributes=json.loads(attrs),
        local=json.loads(local) if local else {},
    )
