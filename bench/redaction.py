"""Benchmark: what a large prompt costs the host, plain text against text
made to be hard to redact, at three sizes.

``python3 bench/redaction.py [--sizes 6,12,24] [--rounds N] [--out FILE]``

Each sample spawns a host (``python -m oma_host``) with its own state
directory, creates an LLM agent with a ``sessionId`` (a stored session)
against the provider simulator in this process, which answers ``"ok"``, and
sends one ``agent/prompt`` of N MB of text. The prompt is redacted and stored
with the session and the run's trace, and sent to the provider. Measured:

- the host's CPU time for the prompt (``/proc/PID/stat`` utime + stime, read
  before and after the request, so spawning and ``initialize`` stay out);
- the host's peak resident memory above its size before the prompt
  (``VmHWM`` after, ``VmRSS`` before, from ``/proc/PID/status``).

Contents: **plain** (``"lorem ipsum dolor sit amet "`` repeated) and
**adversarial** (``"gh"`` repeated: the start of a GitHub token at every
other character, which is not a token anywhere). The adversarial/plain
ratio per size is the amplification; the 24 MB / 6 MB ratio per content is
the growth (4.0 is linear). Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "redaction.json"
CONTENTS = {"plain": "lorem ipsum dolor sit amet ", "adversarial": "gh"}
TIMEOUT_S = 300.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status_kb(pid: int, name: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    raise LookupError(name)


async def one_prompt(simulator: Simulator, text: str) -> tuple[float, float]:
    """(host CPU seconds, peak MB above the host's size before) for one prompt."""
    with tempfile.TemporaryDirectory(prefix="oma-bench-redaction-") as state:
        host = await HostClient.spawn(host_argv("--state-dir", state))
        try:
            assert host.process is not None
            await host.initialize()
            created = await host.request(
                "agent/create",
                {
                    "config": {
                        "name": "big",
                        "provider": "anthropic",
                        "model": "claude-bench",
                        "baseURL": simulator.base_url,
                        "apiKey": "sk-bench-not-a-key",
                    },
                    "sessionId": "bench-session",
                },
            )
            pid = host.process.pid
            cpu, resident = cpu_seconds(pid), status_kb(pid, "VmRSS")
            simulator.script(Reply.text("ok"))
            result = await host.request(
                "agent/prompt", {"agentId": created["agentId"], "input": text}, timeout=TIMEOUT_S
            )
            assert result["success"], result
            return cpu_seconds(pid) - cpu, (status_kb(pid, "VmHWM") - resident) / 1024
        finally:
            await host.close()


async def measure(sizes_mb: list[int], rounds: int) -> dict[str, Any]:
    samples: dict[str, list[tuple[float, float]]] = {}
    with Simulator() as simulator:
        for _ in range(rounds):
            for size in sizes_mb:
                for content, unit in CONTENTS.items():
                    text = unit * (size * 1_000_000 // len(unit))
                    key = f"{content} {size} MB"
                    samples.setdefault(key, []).append(await one_prompt(simulator, text))
                    print(f"  {key}: {samples[key][-1]}", file=sys.stderr)
    report: dict[str, Any] = {"cases": {}}
    for key, values in samples.items():
        report["cases"][key] = {
            "cpu_s": statistics.median(v[0] for v in values),
            "peak_mb": statistics.median(v[1] for v in values),
        }
    return report


def print_report(report: dict[str, Any], sizes_mb: list[int]) -> None:
    cases = report["cases"]
    print("a prompt of N MB through a stored session: host CPU and peak memory (medians)")
    print(f"  {'case':24} {'CPU s':>8} {'peak MB':>9}")
    for key, case in cases.items():
        print(f"  {key:24} {case['cpu_s']:8.2f} {case['peak_mb']:9.1f}")
    for size in sizes_mb:
        plain, hard = cases[f"plain {size} MB"], cases[f"adversarial {size} MB"]
        print(
            f"  {size} MB: adversarial/plain CPU {hard['cpu_s'] / plain['cpu_s']:.2f}x,"
            f" memory {hard['peak_mb'] / max(plain['peak_mb'], 0.1):.2f}x"
        )
    small, large = min(sizes_mb), max(sizes_mb)
    for content in CONTENTS:
        a, b = cases[f"{content} {small} MB"], cases[f"{content} {large} MB"]
        print(
            f"  {content}: {large} MB / {small} MB CPU {b['cpu_s'] / a['cpu_s']:.2f}x,"
            f" memory {b['peak_mb'] / max(a['peak_mb'], 0.1):.2f}x"
            f" (the sizes' ratio is {large / small:.1f}x)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="6,12,24", help="prompt sizes in MB")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    report = asyncio.run(measure(sizes, args.rounds))
    print_report(report, sizes)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    print(f"report: {args.out}")


if __name__ == "__main__":
    main()
