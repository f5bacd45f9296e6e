"""Run the oma-host benchmarks and report them: ``python3 bench/run.py``.

Options: ``--quick`` for a smoke run with few rounds, ``--out FILE`` for the
JSON report (default ``bench/results/latest.json``), ``--only NAME`` to run a
subset, ``--check`` to exit 1 when a ratio misses its target. The readable
table goes to stdout; README.md says how to read it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the ``bench`` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.concurrency import run_concurrency_benchmarks
from bench.guard_copy import run_guard_copy
from bench.harness import Comparison, format_comparison, format_ms, format_ratio, fresh_state
from bench.process_backend import run_process_backend
from bench.providers import run_provider_benchmarks
from bench.startup import REPO_ROOT, format_importtime, run_importtime, run_startup

BENCHMARKS = ("startup", "process", "guard", "providers", "concurrency")
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "latest.json"
# Rounds per benchmark: (full run, --quick).
ROUNDS = {
    "startup": (20, 3),
    "process": (50, 10),
    "guard": (30, 5),
    "providers": (50, 5),
    "concurrency": (12, 2),
}
# Text deltas in the streaming-relay benchmark: (full run, --quick).
RELAY_DELTAS = (10_000, 1_000)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description="Benchmark oma-host against same-run baselines."
    )
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"JSON report path (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--only", action="append", choices=BENCHMARKS, help="run only this benchmark (repeatable)"
    )
    parser.add_argument(
        "--rounds", type=int, help="override the number of interleaved rounds of every benchmark"
    )
    parser.add_argument(
        "--no-importtime", action="store_true", help="skip the -X importtime breakdown"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a ratio misses its target"
    )
    return parser.parse_args(argv)


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def environment(quick: bool) -> dict[str, Any]:
    """What the numbers depend on, recorded beside them."""
    status = _git("status", "--porcelain")
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_dirty": None if status is None else bool(status),
    }


def _rounds(name: str, args: argparse.Namespace) -> int:
    if args.rounds is not None:
        return max(1, int(args.rounds))
    full, quick = ROUNDS[name]
    return quick if args.quick else full


async def run_all(args: argparse.Namespace) -> dict[str, Any]:
    """Run the selected benchmarks in order; returns the report."""
    selected = args.only or list(BENCHMARKS)
    report: dict[str, Any] = {"environment": environment(args.quick), "benchmarks": {}}
    comparisons: list[Comparison] = []
    started = time.perf_counter()
    if "startup" in selected:
        _progress("startup")
        comparisons.append(await run_startup(_rounds("startup", args)))
        if not args.no_importtime:
            imports = await run_importtime()
            report["importtime"] = [item.to_json() for item in imports]
            print(format_importtime(imports), end="\n\n", flush=True)
        _show(comparisons[-1])
    if "process" in selected:
        _progress("process backend")
        comparisons.append(await run_process_backend(_rounds("process", args)))
        _show(comparisons[-1])
    if "guard" in selected:
        _progress("guard and copy")
        for comparison in run_guard_copy(_rounds("guard", args)):
            comparisons.append(comparison)
            _show(comparison)
    if "providers" in selected:
        _progress("providers (simulator)")
        deltas = RELAY_DELTAS[1] if args.quick else RELAY_DELTAS[0]
        for comparison in await run_provider_benchmarks(_rounds("providers", args), deltas):
            comparisons.append(comparison)
            _show(comparison)
    if "concurrency" in selected:
        _progress("concurrency (asyncio provider)")
        rounds = _rounds("concurrency", args)
        for comparison in await run_concurrency_benchmarks(rounds, args.quick):
            comparisons.append(comparison)
            _show(comparison)
    report["benchmarks"] = {c.key: c.to_json() for c in comparisons}
    report["environment"]["loadavg_end"] = list(os.getloadavg())
    report["environment"]["duration_s"] = round(time.perf_counter() - started, 1)
    report["summary"] = summary(comparisons)
    return report


def summary(comparisons: list[Comparison]) -> list[dict[str, Any]]:
    """One line per comparison: the subject's ratio and overhead against its baseline."""
    return [
        {
            "benchmark": c.key,
            "subject": c.subject,
            "baseline": c.baseline,
            "median_ms": c.median(c.subject),
            "baseline_median_ms": c.median(c.baseline),
            "ratio": c.ratio(c.subject),
            "overhead_ms": c.diff_ms(c.subject),
            "target_ratio": c.target,
            "met_target": c.met_target,
        }
        for c in comparisons
    ]


def format_summary(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [
        "summary (ratio = median of subject / median of the baseline measured in the same run)",
        f"  {'benchmark':<26} {'subject ms':>11} {'baseline ms':>12} {'ratio':>7} "
        f"{'overhead ms':>12}  target",
    ]
    for row in report["summary"]:
        target = "-"
        if row["target_ratio"] is not None:
            verdict = "met" if row["met_target"] else "NOT MET"
            target = f"<= {format_ratio(row['target_ratio'])} {verdict}"
        overhead = ("+" if row["overhead_ms"] >= 0 else "") + format_ms(row["overhead_ms"])
        lines.append(
            f"  {row['benchmark']:<26} {format_ms(row['median_ms']):>11}"
            f" {format_ms(row['baseline_median_ms']):>12} {format_ratio(row['ratio']):>8}"
            f" {overhead:>12}  {target}"
        )
    lines.append(
        f"  python {env['python']} on {env['platform']}, {env['cpus']} cpus, load "
        f"{env['loadavg_start'][0]:.2f} -> {env['loadavg_end'][0]:.2f}, "
        f"commit {env['git_commit']}{' (dirty)' if env['git_dirty'] else ''}, "
        f"{env['duration_s']} s{' (quick)' if env['quick'] else ''}"
    )
    return "\n".join(lines)


def _progress(name: str) -> None:
    print(f"... running {name}", file=sys.stderr, flush=True)


def _show(comparison: Comparison) -> None:
    print(format_comparison(comparison), end="\n\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with fresh_state():
        report = asyncio.run(run_all(args))
    print(format_summary(report))
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nJSON report: {out}")
    missed = [row["benchmark"] for row in report["summary"] if row["met_target"] is False]
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
