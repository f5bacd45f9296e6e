"""Run traces (issue 13): rows of a batch go in as tuples in one transaction
that skips the fsync, while the turns stay synced; a writer gathers the
traces of runs one after another, and shutdown never waits out its pause.
A database made before spans were recorded still opens (migrated) and reads."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient, host_argv
from oma_host.core.spans import Span
from oma_host.orchestration.run_records import RunRecords
from oma_host.orchestration.store import Store
from oma_host.orchestration.store_schema import DB_NAME, MEMORY, RunTrace, span_row
from oma_host.server.supervisor import Supervisor

FULL = 2  # PRAGMA synchronous


def test_traces_are_recorded_and_the_connection_stays_fully_synced(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.record_runs(
        [
            ("run_a", "a", "agent/run", "ok", 1, 2, 10.0, 11.0, 1000.0, None),
            ("run_b", "b", "agent/prompt", "error", 3, 4, 12.0, 13.5, 1500.0, "s1"),
        ]
    )
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == FULL
    rows = sqlite3.connect(tmp_path / DB_NAME).execute(
        "SELECT run_id, agent, method, status, input_tokens, output_tokens, started, finished, "
        "duration_ms, session_id FROM runs ORDER BY run_id"
    )
    assert rows.fetchall() == [
        ("run_a", "a", "agent/run", "ok", 1, 2, 10.0, 11.0, 1000.0, None),
        ("run_b", "b", "agent/prompt", "error", 3, 4, 12.0, 13.5, 1500.0, "s1"),
    ]
    store.close()


def test_a_failed_batch_writes_nothing_and_leaves_the_store_usable(tmp_path: Path) -> None:
    store = Store(tmp_path)
    good: RunTrace = ("run_ok", "a", "agent/run", "ok", 0, 0, 0.0, 0.0, 0.0, None)
    bad: Any = ("run_c", None, "agent/run", "ok", 0, 0, 0.0, 0.0, 0.0, None)  # agent is NOT NULL
    try:
        store.record_runs([good, bad])
    except sqlite3.IntegrityError:
        pass
    else:
        raise AssertionError("a NULL agent must be refused")
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == FULL
    store.record_runs([("run_d", "a", "agent/run", "ok", 0, 0, 0.0, 0.0, 0.0, None)])
    rows = sqlite3.connect(tmp_path / DB_NAME).execute("SELECT run_id FROM runs").fetchall()
    assert rows == [("run_d",)]
    store.close()


def test_an_in_memory_store_records_traces_too() -> None:
    store = Store(MEMORY)
    store.record_runs([("run_m", "a", "agent/run", "ok", 0, 0, 0.0, 0.0, 0.0, None)])
    assert store._db.execute("SELECT run_id FROM runs").fetchall() == [("run_m",)]
    store.close()


async def test_a_pause_ends_when_the_supervisor_drains() -> None:
    supervisor = Supervisor()
    started = time.monotonic()
    paused = asyncio.ensure_future(supervisor.pause(30))
    await asyncio.sleep(0.05)
    assert not paused.done()
    await supervisor.drain()
    await asyncio.wait_for(paused, 1)
    await asyncio.wait_for(supervisor.pause(30), 1)  # drained: no pause at all
    assert time.monotonic() - started < 5


async def test_a_pause_lasts_its_delay_otherwise() -> None:
    started = time.monotonic()
    await Supervisor().pause(0.05)
    assert time.monotonic() - started >= 0.04


async def test_runs_one_after_another_are_all_traced_by_shutdown(tmp_path: Path) -> None:
    state = tmp_path / "state"
    client = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await client.initialize()
    agent = (
        await client.request(
            "agent/create", {"config": {"name": "s", "provider": "test", "model": "echo"}}
        )
    )["agentId"]
    run_ids = []
    for n in range(30):
        result = await client.request("agent/run", {"agentId": agent, "input": f"run {n}"})
        run_ids.append(result["identity"]["runId"])
    assert await client.close() == 0
    database = sqlite3.connect(state / DB_NAME)
    rows = database.execute("SELECT run_id, agent, method, status FROM runs").fetchall()
    database.close()
    assert sorted(rows) == sorted((run_id, "s", "agent/run", "ok") for run_id in run_ids)


# The runs table as the first versions made it, before spans were recorded.
_OLD_RUNS = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, method TEXT NOT NULL,
    status TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
    started REAL NOT NULL, finished REAL NOT NULL, duration_ms REAL NOT NULL, session_id TEXT
)
"""


def test_a_database_of_the_old_schema_reads_as_it_is_and_opens_migrated(tmp_path: Path) -> None:
    old = sqlite3.connect(tmp_path / DB_NAME)
    old.execute(_OLD_RUNS)
    old.execute(
        "INSERT INTO runs VALUES "
        "('run_old', 'a', 'agent/run', 'ok', 1, 2, 10.0, 11.0, 1000.0, NULL)"
    )
    old.commit()
    old.close()
    # A reader sees the old database as it is: no column added, none written.
    with RunRecords(tmp_path) as records:
        (row,) = records.list_runs()
        assert (row.run_id, row.turns, row.trace_id) == ("run_old", None, None)
        assert records.spans(row) == [] and records.evaluations("run_old") == []
    columns = {r[1] for r in sqlite3.connect(tmp_path / DB_NAME).execute("PRAGMA table_info(runs)")}
    assert "turns" not in columns
    # A host opening it adds what it lacks, and records a run with its spans.
    store = Store(tmp_path)
    span = Span("a" * 32, "b" * 16, None, "run_new", "invoke_agent", "invoke_agent a", 5, 9)
    span.attributes["gen_ai.agent.name"] = "a"
    trace = RunTrace("run_new", "a", "agent/run", "ok", 3, 4, 20.0, 21.0, 1000.0, None, turns=2)
    store.record_runs([trace._replace(trace_id="a" * 32)], [span_row(span)])
    store.close()
    with RunRecords(tmp_path) as records:
        new, old_row = records.list_runs()
        assert (new.run_id, new.turns, old_row.run_id, old_row.turns) == (
            "run_new",
            2,
            "run_old",
            None,
        )
        (read,) = records.spans(new)
        assert read == span


def test_a_reader_never_writes(tmp_path: Path) -> None:
    Store(tmp_path).close()
    with RunRecords(tmp_path) as records:
        try:
            records._db.execute("DELETE FROM runs")
        except sqlite3.OperationalError as error:
            assert "readonly" in str(error)
        else:
            raise AssertionError("a reader's connection must be read-only")
