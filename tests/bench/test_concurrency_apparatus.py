"""The concurrency benchmark's apparatus: its baseline, aiohttp in a process
of its own (``bench/aiohttp_client.py``), and the harness that keeps the
benchmark's own collector out of every sample and its hosts' traces out of
the user's state directory (``bench/harness.py``)."""

from __future__ import annotations

import gc
import os
import socket
import sqlite3

from bench.concurrency import BaselineClient, Failures, provider
from bench.harness import fresh_state, interleave_async
from oma_host.cli.client import HostClient, host_argv


async def test_the_baseline_process_sends_every_request_and_times_the_burst() -> None:
    async with provider(100) as url, BaselineClient.spawn() as baseline:
        failures = Failures()
        first = await baseline.burst(f"{url}/v1/messages", 50, failures, 60)
        second = await baseline.burst(f"{url}/v1/messages", 50, failures, 60)
    assert failures.counts == {}
    # Each burst waited for the provider's latency, and no longer than a hang would.
    assert 0.1 <= first < 30 and 0.1 <= second < 30


async def test_the_baseline_process_counts_what_fails_and_goes_on() -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    async with provider(0) as url, BaselineClient.spawn() as baseline:
        failures = Failures()
        await baseline.burst(f"http://127.0.0.1:{port}/v1/messages", 3, failures, 60)
        assert sum(failures.counts.values()) == 3
        assert "ClientConnectorError" in next(iter(failures.first.values()))
        await baseline.burst(f"{url}/v1/messages", 3, failures, 60)
    assert sum(failures.counts.values()) == 3  # the second burst succeeded


async def test_samples_run_with_the_collector_off_and_leave_it_as_found() -> None:
    seen: list[bool] = []

    async def sample() -> float:
        seen.append(gc.isenabled())
        return 0.001

    assert gc.isenabled()
    samples = await interleave_async({"a": sample, "b": sample}, rounds=2)
    assert samples == {"a": [1.0, 1.0], "b": [1.0, 1.0]}
    assert seen == [False] * 6  # the warm-up round too
    assert gc.isenabled()
    gc.disable()
    try:
        await interleave_async({"a": sample}, rounds=1)
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()


async def test_hosts_started_by_a_benchmark_keep_their_traces_in_a_fresh_state_directory() -> None:
    before = os.environ.get("XDG_STATE_HOME")
    with fresh_state() as state:
        client = await HostClient.spawn(host_argv())
        await client.initialize({})
        config = {"name": "t", "provider": "test", "model": "echo"}
        agent = (await client.request("agent/create", {"config": config}))["agentId"]
        result = await client.request("agent/run", {"agentId": agent, "input": "hi"})
        assert await client.close() == 0
        database = sqlite3.connect(state / "oma-host" / "oma-host.sqlite3")
        runs = database.execute("SELECT run_id FROM runs").fetchall()
        database.close()
        assert runs == [(result["identity"]["runId"],)]
    assert not state.exists()
    assert os.environ.get("XDG_STATE_HOME") == before
