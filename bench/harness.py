"""What every benchmark shares: interleaved sampling, summary statistics,
comparisons against a baseline measured in the same run, and the table.

Each variant is a callable that measures itself and returns the elapsed
seconds of one sample, so setup and teardown (spawning a host to measure a
request, killing a server after its ``initialize``) stay out of the number.
Rounds interleave the variants and cycle through every order of them (AB,
BA for two; all six orders for three): the machines are noisy, and work a
variant leaves behind (a host reaping its child, a collector running) slows
whatever runs next, so each variant runs first, last and right after every
other variant equally often.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SyncSample = Callable[[], float]
AsyncSample = Callable[[], Awaitable[float]]
# A p90 over this multiple of the median means the run was disturbed.
NOISY_SPREAD = 1.5


def _orders(names: list[str]) -> list[tuple[str, ...]]:
    """Every order of the variants; round ``i`` runs order ``i % len(orders)``."""
    return list(itertools.permutations(names))


def interleave(
    variants: dict[str, SyncSample], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Sample every variant ``rounds`` times, interleaved; returns ms per variant."""
    orders = _orders(list(variants))
    for round_index in range(warmup):
        for name in orders[round_index % len(orders)]:
            variants[name]()
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_index in range(rounds):
        for name in orders[round_index % len(orders)]:
            samples[name].append(variants[name]() * 1000.0)
    return samples


async def interleave_async(
    variants: dict[str, AsyncSample], rounds: int, warmup: int = 1
) -> dict[str, list[float]]:
    """:func:`interleave` for coroutine variants (one at a time, never
    concurrent), with this process's collector kept out of the samples.

    These variants measure other processes, or aiohttp in this one; this
    process's heap (every module the benchmarks import, the clients, earlier
    samples) is the apparatus. With the collector on, a full collection of
    it (50-60 ms) landed in whichever sample had allocated the most, most
    often the in-process aiohttp baseline of the concurrency benchmark. So
    the heap is collected once before the rounds, the collector is off
    during each sample, and the young generations are collected after it,
    which costs little and keeps the caches as the sample left them (a full
    collection before every sample made a 1 ms ACP turn 0.2-0.3 ms slower)."""
    orders = _orders(list(variants))
    gc.collect()
    for round_index in range(warmup):
        for name in orders[round_index % len(orders)]:
            await _without_collector(variants[name])
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for round_index in range(rounds):
        for name in orders[round_index % len(orders)]:
            samples[name].append(await _without_collector(variants[name]) * 1000.0)
    return samples


async def _without_collector(sample: AsyncSample) -> float:
    """One sample with the collector off, its young garbage collected after it."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return await sample()
    finally:
        if enabled:
            gc.enable()
        gc.collect(1)


def per_call(fn: Callable[[], object], number: int) -> SyncSample:
    """A sample that runs ``fn`` ``number`` times and returns seconds per call."""

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - start) / number

    return sample


def calibrate(fn: Callable[[], object], min_sample_s: float = 0.005, cap: int = 10_000) -> int:
    """How many calls of ``fn`` make one sample last at least ``min_sample_s``,
    so a microsecond operation is not measured at the clock's resolution."""
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    if once >= min_sample_s:
        return 1
    return min(cap, math.ceil(min_sample_s / max(once, 1e-7)))


def p90(samples: list[float]) -> float:
    """The 90th percentile (linear interpolation between closest ranks)."""
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=10, method="inclusive")[8]


@dataclass
class Comparison:
    """Variants measured together in one run, read against one baseline.

    ``ratio(name)`` is median(name) / median(baseline); ``target`` is the ratio
    ``subject`` should stay at or under, when there is one. ``reference_ms``
    holds outside figures to print beside ours (not measured here).
    """

    key: str
    title: str
    baseline: str
    subject: str
    samples: dict[str, list[float]]
    unit_note: str = ""
    target: float | None = None
    reference_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def ratio(self, name: str) -> float:
        base = self.median(self.baseline)
        return self.median(name) / base if base > 0 else math.inf

    def diff_ms(self, name: str) -> float:
        return self.median(name) - self.median(self.baseline)

    @property
    def met_target(self) -> bool | None:
        return None if self.target is None else self.ratio(self.subject) <= self.target

    def noise_warnings(self) -> list[str]:
        """Variants whose p90 is far above their median: the machine was busy."""
        warnings = []
        for name, values in self.samples.items():
            spread = p90(values) / self.median(name) if self.median(name) > 0 else 1.0
            if spread > NOISY_SPREAD:
                warnings.append(
                    f"{name}: p90 is {spread:.1f}x the median; "
                    "something else was running, rerun for firmer numbers"
                )
        return warnings

    def to_json(self) -> dict[str, Any]:
        variants: dict[str, Any] = {}
        for name, values in self.samples.items():
            variants[name] = {
                "n": len(values),
                "median_ms": self.median(name),
                "p90_ms": p90(values),
                "min_ms": min(values),
                "ratio_vs_baseline": self.ratio(name),
                "diff_vs_baseline_ms": self.diff_ms(name),
                "samples_ms": values,
            }
            if name in self.reference_ms:
                variants[name]["reference_ms"] = self.reference_ms[name]
        return {
            "title": self.title,
            "baseline": self.baseline,
            "subject": self.subject,
            "ratio": self.ratio(self.subject),
            "overhead_ms": self.diff_ms(self.subject),
            "target_ratio": self.target,
            "met_target": self.met_target,
            "variants": variants,
            "notes": self.notes,
            "noise_warnings": self.noise_warnings(),
        }


def _ms(value: float) -> str:
    if value >= 100:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def format_ratio(value: float) -> str:
    """``1.253x``; small ratios keep two significant digits (``0.00026x``)."""
    return f"{value:.3f}x" if value >= 0.1 else f"{value:.2g}x"


def format_ms(value: float) -> str:
    """Milliseconds with a precision that suits the magnitude, sign kept."""
    return _ms(abs(value)) if value >= 0 else "-" + _ms(-value)


def format_comparison(comparison: Comparison) -> str:
    """A readable block: one row per variant, baseline first."""
    rounds = max(len(values) for values in comparison.samples.values())
    lines = [f"{comparison.title}  ({rounds} interleaved rounds{comparison.unit_note})"]
    has_reference = bool(comparison.reference_ms)
    header = f"  {'variant':<44} {'median ms':>10} {'p90 ms':>10} {'min ms':>10} {'vs base':>8}"
    if has_reference:
        header += f" {'TS ref ms':>10} {'vs TS':>8}"
    lines.append(header)
    names = [comparison.baseline] + [n for n in comparison.samples if n != comparison.baseline]
    for name in names:
        values = comparison.samples[name]
        label = f"{name} (baseline)" if name == comparison.baseline else name
        row = (
            f"  {label:<44} {_ms(comparison.median(name)):>10} {_ms(p90(values)):>10}"
            f" {_ms(min(values)):>10} {format_ratio(comparison.ratio(name)):>8}"
        )
        if has_reference:
            reference = comparison.reference_ms.get(name)
            if reference is None:
                row += f" {'':>10} {'':>8}"
            else:
                row += f" {reference:>10.1f} {format_ratio(comparison.median(name) / reference):>8}"
        lines.append(row)
    subject = comparison.subject
    summary = (
        f"  => {subject}: {format_ratio(comparison.ratio(subject))} the baseline, "
        f"{'+' if comparison.diff_ms(subject) >= 0 else ''}{format_ms(comparison.diff_ms(subject))}"
        " ms per call (difference of medians)"
    )
    if comparison.target is not None:
        verdict = "met" if comparison.met_target else "NOT MET"
        summary += f"; target <= {format_ratio(comparison.target)} {verdict}"
    lines.append(summary)
    lines.extend(f"  note: {note}" for note in comparison.notes)
    lines.extend(f"  noisy: {warning}" for warning in comparison.noise_warnings())
    return "\n".join(lines)


@contextlib.contextmanager
def fresh_state() -> Iterator[Path]:
    """Point every host this benchmark starts at an empty state directory
    (``XDG_STATE_HOME``, which the hosts inherit), removed afterwards. A
    host writes a trace of every run to its store; in the user's own state
    directory the benchmarks had left 2.9 million of them (421 MB), and the
    host's trace writer spent about 27 µs a run there against 9 µs in an
    empty one, so the figures moved with the benchmarks run before."""
    previous = os.environ.get("XDG_STATE_HOME")
    with tempfile.TemporaryDirectory(prefix="oma-bench-state-") as directory:
        os.environ["XDG_STATE_HOME"] = directory
        try:
            yield Path(directory)
        finally:
            if previous is None:
                del os.environ["XDG_STATE_HOME"]
            else:
                os.environ["XDG_STATE_HOME"] = previous


def run_standalone(
    prog: str,
    description: str | None,
    default_out: Path,
    run: Callable[[int], Awaitable[Comparison]],
    argv: list[str] | None = None,
) -> int:
    """The command line of a benchmark run on its own: ``--rounds N`` (100),
    ``--quick`` (10 rounds), ``--out FILE``; prints the table, writes the JSON."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--rounds", type=int, default=100, help="interleaved rounds (100)")
    parser.add_argument("--quick", action="store_true", help="10 rounds: a smoke run")
    parser.add_argument("--out", type=Path, default=default_out, help="JSON report path")
    args = parser.parse_args(argv)
    with fresh_state():
        comparison = asyncio.run(run(10 if args.quick else args.rounds))
    print(format_comparison(comparison))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(comparison.to_json(), indent=2) + "\n")
    print(f"report: {args.out}", file=sys.stderr)
    return 0
