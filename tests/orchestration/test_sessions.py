"""Persistent sessions: completed prompt turns survive a host killed with
SIGKILL mid-turn; the interrupted turn does not; the database opens cleanly;
the state directory is kept to its owner."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import stat
from pathlib import Path

import pytest

from oma_host.cli.client import HostClient, RpcError, host_argv
from oma_host.orchestration.store_schema import DB_NAME

# Answers at once, unless the prompt says "slow": then it records its pid and sleeps.
REPLIER = (
    'read line; case "$line" in *slow*) echo $$ > "$PIDFILE"; sleep 60;; esac; echo "re: $line"'
)


def config(pidfile: Path) -> dict[str, object]:
    return {
        "name": "durable",
        "backend": {
            "kind": "process",
            "command": "sh",
            "args": ["-c", REPLIER],
            "env": {"PIDFILE": str(pidfile)},
        },
    }


async def test_completed_turns_survive_sigkill_and_the_interrupted_one_does_not(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    pidfile = tmp_path / "pid"
    first = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await first.initialize()
    agent = (
        await first.request("agent/create", {"config": config(pidfile), "sessionId": "chat-1"})
    )["agentId"]
    for text in ("one", "two"):
        result = await first.request("agent/prompt", {"agentId": agent, "input": text})
        assert result["output"] == f"re: {text}\n"
    _, pending = first.start_request("agent/prompt", {"agentId": agent, "input": "slow three"})
    for _ in range(400):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        await asyncio.sleep(0.025)
    child = int(pidfile.read_text())
    first.process.send_signal(signal.SIGKILL)
    await first.wait()
    pending.cancel()
    with contextlib.suppress(ProcessLookupError):
        os.kill(child, signal.SIGKILL)

    database = sqlite3.connect(state / DB_NAME)
    assert database.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    database.close()

    second = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await second.initialize()
    restored = (
        await second.request("agent/create", {"config": config(pidfile), "sessionId": "chat-1"})
    )["agentId"]
    history = (await second.request("agent/history", {"agentId": restored}))["messages"]
    texts = [block["text"] for message in history for block in message["content"]]
    assert texts == ["one", "re: one\n", "two", "re: two\n"]
    # The restored conversation goes on, and the new turn is stored too.
    await second.request("agent/prompt", {"agentId": restored, "input": "four"})
    other = (
        await second.request("agent/create", {"config": config(pidfile), "sessionId": "chat-1"})
    )["agentId"]
    again = (await second.request("agent/history", {"agentId": other}))["messages"]
    assert len(again) == 6
    # A new sessionId starts empty; reset clears the stored session.
    fresh = (await second.request("agent/create", {"config": config(pidfile), "sessionId": "new"}))[
        "agentId"
    ]
    assert (await second.request("agent/history", {"agentId": fresh}))["messages"] == []
    await second.request("agent/reset", {"agentId": other})
    cleared = (
        await second.request("agent/create", {"config": config(pidfile), "sessionId": "chat-1"})
    )["agentId"]
    assert (await second.request("agent/history", {"agentId": cleared}))["messages"] == []
    assert await second.close() == 0


async def test_run_traces_are_recorded_without_secrets(tmp_path: Path) -> None:
    state = tmp_path / "state"
    client = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await client.initialize()
    key = "sk-ant-api03-trace-secret-0000000000"
    agent = (
        await client.request(
            "agent/create",
            {
                "config": {"name": "t", "provider": "test", "model": "echo", "apiKey": key},
                "sessionId": "keyed",
            },
        )
    )["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": f"my key is {key}"})
    await client.request("agent/prompt", {"agentId": agent, "input": f"again: {key}"})
    assert await client.close() == 0
    database = sqlite3.connect(state / DB_NAME)
    rows = database.execute("SELECT run_id, agent, method, status FROM runs").fetchall()
    assert (result["identity"]["runId"], "t", "agent/run", "ok") in rows
    assert {row[2] for row in rows} == {"agent/run", "agent/prompt"}
    dump = "\n".join(database.iterdump())
    assert key not in dump
    assert "again: [redacted]" in dump  # the stored turn, with the key taken out
    database.close()


async def test_a_burst_of_runs_has_every_trace_recorded(tmp_path: Path) -> None:
    # Traces finishing while others are written join the next batch: none is lost,
    # and shutdown waits for the last batch.
    state = tmp_path / "state"
    client = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await client.initialize()
    agent = (
        await client.request(
            "agent/create", {"config": {"name": "b", "provider": "test", "model": "echo"}}
        )
    )["agentId"]
    results = await asyncio.gather(
        *(client.request("agent/run", {"agentId": agent, "input": f"run {n}"}) for n in range(60))
    )
    assert await client.close() == 0
    database = sqlite3.connect(state / DB_NAME)
    recorded = {row[0] for row in database.execute("SELECT run_id FROM runs")}
    database.close()
    assert recorded == {result["identity"]["runId"] for result in results}


async def test_one_redaction_serves_stored_sessions_traces_and_logs(tmp_path: Path) -> None:
    """Credential shapes beyond API keys (a GitHub token, an AWS key id, a
    password assignment, a PEM private key) are taken out of the stored
    session, the --trace file and the debug log alike."""
    state, trace = tmp_path / "state", tmp_path / "trace.jsonl"
    argv = ("--state-dir", str(state), "--trace", str(trace), "--log-level", "DEBUG")
    client = await HostClient.spawn(host_argv(*argv))
    await client.initialize()
    secrets = ("ghp_" + "Z" * 36, "AKIA" + "Q" * 16, "hunter2-horse", "MIIEvQIBADANBgkq")
    turn = (
        f"token ghp_{'Z' * 36}, key id AKIA{'Q' * 16}, password=hunter2-horse\n"
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    )
    created = await client.request(
        "agent/create",
        {"config": {"name": "t", "provider": "test", "model": "echo"}, "sessionId": "shapes"},
    )
    result = await client.request("agent/prompt", {"agentId": created["agentId"], "input": turn})
    assert result["success"], result
    assert await client.close() == 0
    database = sqlite3.connect(state / DB_NAME)
    stored = "\n".join(database.iterdump())
    database.close()
    for where in (stored, trace.read_text(), await client.stderr_text()):
        assert "key id [redacted], password=[redacted]" in where  # the turn, redacted
        assert not [secret for secret in secrets if secret in where]


async def test_an_unusable_state_dir_is_a_clear_error_and_the_host_keeps_serving(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    client = await HostClient.spawn(host_argv("--state-dir", str(blocker / "state")))
    await client.initialize()
    config = {"name": "t", "provider": "test", "model": "echo"}
    with pytest.raises(RpcError) as caught:
        await client.request("agent/create", {"config": config, "sessionId": "s"})
    assert caught.value.code == -32603 and caught.value.data == {"type": "StoreError"}
    assert str(blocker) in caught.value.message
    agent = (await client.request("agent/create", {"config": config}))["agentId"]
    assert (await client.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
    assert await client.close() == 0


async def test_a_state_dir_is_kept_to_its_owner_and_a_linked_one_is_refused(
    tmp_path: Path,
) -> None:
    config = {"name": "t", "provider": "test", "model": "echo"}
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    client = await HostClient.spawn(host_argv("--state-dir", str(state)))
    await client.initialize()
    await client.request("agent/create", {"config": config, "sessionId": "s"})
    assert await client.close() == 0
    assert stat.S_IMODE(state.stat().st_mode) == 0o700  # the conversations are the user's

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    linked = tmp_path / "linked"
    linked.symlink_to(shared)
    client = await HostClient.spawn(host_argv("--state-dir", str(linked)))
    await client.initialize()
    with pytest.raises(RpcError) as caught:
        await client.request("agent/create", {"config": config, "sessionId": "s"})
    assert caught.value.code == -32603 and caught.value.data == {"type": "StoreError"}
    assert f"the folder {linked} is a symbolic link" in caught.value.message
    assert list(shared.iterdir()) == []  # nothing was kept where others can reach it
    agent = (await client.request("agent/create", {"config": config}))["agentId"]
    assert (await client.request("agent/run", {"agentId": agent, "input": "x"}))["success"]
    assert await client.close() == 0
