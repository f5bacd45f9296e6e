"""Benchmark: what the Ray executor adds per task against the local one.

``python3 bench/ray_executor.py [--rounds N] [--out FILE]``

Starts a two-node Ray cluster on this machine (``oma_host/testing/ray_cluster.py``:
two raylets on loopback, one CPU each), spawns one host, and runs the same
``oma/runTasks`` graph of 32 short process members (``cat``) with the local
executor and with ``{"kind": "ray"}``, alternated, after one warm-up run of
each (the first Ray run starts the workers). Two graphs:

- **chain**: each task depends on the one before, so the 32 run one after
  another: the wall time over 32 is the latency of one task;
- **fan-out**: 32 independent tasks, ``maxConcurrency`` 2 (the cluster's two
  CPUs) for both executors.

Reported: the median wall time per run, per task, the Ray/local ratio and
the difference per task (what a Ray task costs beyond a local one: the task's
submission and scheduling, the runner process on the worker, the result's way
back). One machine cannot show what a real cluster buys (more CPUs and
memory than one host has); this is the price of each task that buys it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.ray_cluster import RayCluster

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "ray_executor.json"
TASKS = 32
TIMEOUT_S = 600.0
TEAM = {
    "agents": [{"name": "cat", "backend": {"kind": "process", "command": "cat"}}],
    "maxConcurrency": 2,
}


def graph(chained: bool) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    for index in range(TASKS):
        task: dict[str, Any] = {"id": f"t{index}", "title": f"T{index}", "description": "hello"}
        if chained and index:
            task["dependsOn"] = [f"t{index - 1}"]
        tasks.append(task)
    return tasks


async def one_run(client: HostClient, tasks: list[dict[str, Any]], executor: Any) -> float:
    params: dict[str, Any] = {"team": TEAM, "tasks": tasks}
    if executor is not None:
        params["executor"] = executor
    start = time.perf_counter()
    result = await client.request("oma/runTasks", params, timeout=TIMEOUT_S)
    elapsed = time.perf_counter() - start
    if not result["success"]:
        raise RuntimeError(f"a run failed: {json.dumps(result)[:2000]}")
    return elapsed


async def measure(rounds: int) -> dict[str, Any]:
    cluster = RayCluster.start()
    try:
        client = await HostClient.spawn(host_argv())
        try:
            await client.initialize()
            ray = {"kind": "ray", "address": cluster.address}
            report: dict[str, Any] = {"tasks": TASKS, "rounds": rounds}
            for name, chained in (("chain", True), ("fan-out", False)):
                tasks = graph(chained)
                await one_run(client, tasks, None)  # warm-up
                await one_run(client, tasks, ray)
                samples: dict[str, list[float]] = {"local": [], "ray": []}
                for _ in range(rounds):
                    samples["local"].append(await one_run(client, tasks, None))
                    samples["ray"].append(await one_run(client, tasks, ray))
                local = statistics.median(samples["local"])
                remote = statistics.median(samples["ray"])
                report[name] = {
                    "local_s": local,
                    "ray_s": remote,
                    "local_per_task_ms": local / TASKS * 1000,
                    "ray_per_task_ms": remote / TASKS * 1000,
                    "ratio": remote / local,
                    "added_per_task_ms": (remote - local) / TASKS * 1000,
                    "samples": samples,
                }
        finally:
            await client.close()
    finally:
        cluster.stop()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    options = parser.parse_args()
    report = asyncio.run(measure(options.rounds))
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{TASKS} process members (cat), median of {options.rounds} alternated runs")
    print("| graph | local per task | Ray per task | Ray / local | added per task |")
    print("|---|---|---|---|---|")
    for name in ("chain", "fan-out"):
        row = report[name]
        print(
            f"| {name} | {row['local_per_task_ms']:.1f} ms | {row['ray_per_task_ms']:.1f} ms "
            f"| {row['ratio']:.2f}x | {row['added_per_task_ms']:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
