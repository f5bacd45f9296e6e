"""Benchmark: what a large MCP tool result costs the host, at four sizes.

``python3 bench/mcp_results.py [--sizes 4,8,16,32] [--rounds N] [--out FILE]``

Each sample spawns a host (``python -m oma_host``), creates an LLM agent
with one stdio MCP server (``tests/llm/mcp_servers/faults.py``, on the
official ``mcp`` SDK) against the provider simulator in this process, and
runs one turn in which the model calls the server's ``big`` tool for a text
of N MiB (after one warm-up turn asking for one byte); the second model
turn answers ``"ok"``. Measured: the host's CPU
time for the run (``/proc/PID/stat``, before and after the request) and its
peak resident memory above its size before the run. The SDK's server sends
a text result twice (as ``content`` and as ``structuredContent``), so a
message is some 2N MiB; one over the host's 16 MiB limit (N of 8 and up) is
read and dropped, and the call is an error result. The ratios of the sizes
kept say whether the path is linear.
Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.redaction import cpu_seconds, status_kb
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator

REPO_ROOT = Path(__file__).resolve().parent.parent
FAULTS = REPO_ROOT / "tests" / "llm" / "mcp_servers" / "faults.py"
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "mcp_results.json"
TIMEOUT_S = 300.0


async def one_result(simulator: Simulator, size_mib: int) -> tuple[float, float]:
    """(host CPU seconds, peak MB above the host's size before) for one run."""
    with tempfile.TemporaryDirectory(prefix="oma-bench-mcp-") as state:
        host = await HostClient.spawn(host_argv("--state-dir", state))
        try:
            assert host.process is not None
            await host.initialize()
            server = {"name": "faults", "command": sys.executable, "args": [str(FAULTS)]}
            config = {
                "name": "big",
                "provider": "anthropic",
                "model": "claude-bench",
                "baseURL": simulator.base_url,
                "apiKey": "sk-bench-not-a-key",
                "mcpServers": [server],
                "permissions": [{"tool": "faults__*", "action": "allow"}],
            }
            created = await host.request("agent/create", {"config": config})
            params = {"agentId": created["agentId"], "input": "go"}
            call = {"type": "tool_use", "id": "b", "name": "faults__big"}
            pid = host.process.pid
            for size in (1, size_mib * 1024 * 1024):  # the first warms up (imports, the server)
                simulator.script(
                    Reply(content=[{**call, "input": {"size": size}}]), Reply.text("ok")
                )
                cpu, resident = cpu_seconds(pid), status_kb(pid, "VmRSS")
                result = await host.request("agent/run", params, timeout=TIMEOUT_S)
                assert result["success"], result
            return cpu_seconds(pid) - cpu, (status_kb(pid, "VmHWM") - resident) / 1024
        finally:
            await host.close()


async def measure(sizes: list[int], rounds: int) -> dict[str, Any]:
    samples: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
    with Simulator() as simulator:
        for _ in range(rounds):
            for size in sizes:
                samples[size].append(await one_result(simulator, size))
                print(f"  {size} MiB: {samples[size][-1]}", file=sys.stderr)
    return {
        "cases": {
            f"{size} MiB": {
                "cpu_s": statistics.median(v[0] for v in values),
                "peak_mb": statistics.median(v[1] for v in values),
            }
            for size, values in samples.items()
        }
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,6,8,16,32", help="result sizes in MiB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    report = asyncio.run(measure(sizes, args.rounds))
    cases = report["cases"]
    print("an MCP tool result of N MiB through a run: host CPU and peak memory (medians)")
    for key, case in cases.items():
        print(f"  {key:8} CPU {case['cpu_s']:6.2f} s  peak {case['peak_mb']:7.1f} MB")
    small, large = f"{min(sizes)} MiB", f"{max(sizes)} MiB"
    ratio = cases[large]["cpu_s"] / max(cases[small]["cpu_s"], 0.01)
    print(f"  {large} / {small}: CPU {ratio:.2f}x for {max(sizes) / min(sizes):.1f}x the size")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"report: {args.out}")


if __name__ == "__main__":
    main()
