"""Several hosts on one state directory (issue 12, item 12): opening a new
database at once, waiting for each other's writes, and creating the same new
session at once all succeed; the session is created once."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient, host_argv
from oma_host.orchestration.store import Store
from oma_host.orchestration.store_schema import DB_NAME, RunTrace


def trace(run_id: str) -> RunTrace:
    """A run trace, as the host records one."""
    return (run_id, "a", "agent/run", "ok", 0, 0, 0.0, 0.0, 0.0, None)


def hold_the_write_lock(path: Path, seconds: float) -> threading.Thread:
    """Another host's write transaction on the database at ``path``, held for
    ``seconds`` in a thread (it holds the lock when this returns)."""
    holding = threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        holding.set()
        time.sleep(seconds)
        other.execute("COMMIT")
        other.close()

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait()
    return thread


def stored_runs(path: Path) -> list[tuple[str]]:
    return sqlite3.connect(path).execute("SELECT run_id FROM runs").fetchall()


def test_opening_a_new_database_while_another_host_writes_to_it_waits(tmp_path: Path) -> None:
    # Switching a new database to WAL then deadlocks, and SQLite says
    # "database is locked" at once: the store waits and tries again.
    holder = hold_the_write_lock(tmp_path / DB_NAME, 0.5)
    try:
        store = Store(tmp_path)
    finally:
        holder.join()
    store.record_runs([trace("first")])
    assert stored_runs(tmp_path / DB_NAME) == [("first",)]


def test_a_write_waits_for_another_hosts_longer_than_sqlites_default(tmp_path: Path) -> None:
    store = Store(tmp_path)
    # Python's sqlite3 waits 5 s by default before "database is locked".
    holder = hold_the_write_lock(tmp_path / DB_NAME, 6)
    try:
        store.record_runs([trace("waited")])
    finally:
        holder.join()
    assert stored_runs(tmp_path / DB_NAME) == [("waited",)]


def test_a_session_another_host_created_first_is_adopted_not_an_error(tmp_path: Path) -> None:
    ours, theirs = Store(tmp_path), Store(tmp_path)
    assert ours.load_session("s") is None  # this host finds no session...
    mine: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "mine"}]}]
    first: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "first"}]}]
    assert theirs.create_session("s", "a", first) is None  # ...another creates it...
    assert ours.create_session("s", "a", mine) == first  # ...and this one gets theirs
    assert ours.load_session("s") == theirs.load_session("s") == first


async def test_two_hosts_creating_the_same_new_sessions_at_once(tmp_path: Path) -> None:
    hosts = [await HostClient.spawn(host_argv("--state-dir", str(tmp_path))) for _ in range(2)]
    try:
        for host in hosts:
            await host.initialize()

        async def create(host: HostClient, session: str, text: str) -> str:
            history = [{"role": "user", "content": [{"type": "text", "text": text}]}]
            config = {"name": "e", "provider": "test", "model": "echo", "history": history}
            answer = await host.request("agent/create", {"config": config, "sessionId": session})
            agent_id: str = answer["agentId"]
            return agent_id

        for number in range(10):
            session = f"chat-{number}"
            agents = await asyncio.gather(
                *(create(host, session, f"from host {n}") for n, host in enumerate(hosts))
            )
            histories = [
                (await host.request("agent/history", {"agentId": agent}))["messages"]
                for host, agent in zip(hosts, agents, strict=True)
            ]
            assert histories[0] == histories[1], session  # one session, one history
    finally:
        for host in hosts:
            await host.close()
