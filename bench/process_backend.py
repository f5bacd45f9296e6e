"""Benchmark 2: an ``agent/run`` of a process-backend agent through a running
oma-host, against spawning the same command directly with asyncio.

The host is spawned and initialized once, and the agent created once, before
anything is measured; each sample is then one ``agent/run`` of
``{"kind": "process", "command": "cat"}`` with input ``"hello"``. The
baseline does by hand what the bridge does at its core, in the client's own
process: ``create_subprocess_exec("cat")``, write ``hello``, read stdout to
end of file, wait. The difference of the medians is what the host adds per
call (JSON-RPC both ways, params models, the guard, the bridge's process
group and stderr capture, the result record).

A third variant, an ``agent/list`` round trip, splits that overhead: it is
the JSON-RPC cost alone, without any process.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.harness import Comparison, interleave_async
from oma_host.cli.client import HostClient, host_argv

COMMAND = "cat"
INPUT = "hello"
AGENT_CONFIG = {"name": "b", "backend": {"kind": "process", "command": COMMAND}}
HOST_RUN = "oma-host agent/run (process backend)"
DIRECT = "direct asyncio subprocess"
RPC_ONLY = "oma-host agent/list round trip"
REQUEST_TIMEOUT_S = 30.0


async def direct_run() -> float:
    """Spawn ``cat`` in this process, feed it ``hello``, read to EOF, wait."""
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        COMMAND, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INPUT.encode())
    await process.stdin.drain()
    process.stdin.close()
    output = await process.stdout.read()
    await process.wait()
    elapsed = time.perf_counter() - start
    if output.decode() != INPUT or process.returncode != 0:
        raise RuntimeError(f"direct {COMMAND}: got {output!r}, exit {process.returncode}")
    return elapsed


async def run_process_backend(rounds: int, warmup: int = 3) -> Comparison:
    """Interleave host runs, direct spawns and bare RPC round trips."""
    client = await HostClient.spawn(host_argv())
    try:
        await client.initialize()
        created: dict[str, Any] = await client.request("agent/create", {"config": AGENT_CONFIG})
        params = {"agentId": created["agentId"], "input": INPUT}

        async def host_run() -> float:
            start = time.perf_counter()
            result = await client.request("agent/run", params, timeout=REQUEST_TIMEOUT_S)
            elapsed = time.perf_counter() - start
            if result.get("output") != INPUT or result["status"]["code"] != "ok":
                raise RuntimeError(f"agent/run: unexpected result {result}")
            return elapsed

        async def rpc_round_trip() -> float:
            start = time.perf_counter()
            await client.request("agent/list", {}, timeout=REQUEST_TIMEOUT_S)
            return time.perf_counter() - start

        samples = await interleave_async(
            {DIRECT: direct_run, HOST_RUN: host_run, RPC_ONLY: rpc_round_trip}, rounds, warmup
        )
    finally:
        await client.close()
    return Comparison(
        key="process_backend",
        title=f"process backend: one run of {COMMAND!r} with input {INPUT!r}",
        baseline=DIRECT,
        subject=HOST_RUN,
        samples=samples,
        notes=[
            "host spawned, initialized and the agent created once, before measuring",
            f"'{RPC_ONLY}' is the JSON-RPC share of the overhead (no process)",
        ],
    )
