"""Benchmark: what the host adds to a prompt turn as a session grows.

``python3 bench/history_growth.py [--turns N] [--window N] [--sessions N] [--quick]``

A stored session (``agent/create {sessionId}``, an Anthropic-wire LLM
agent) in a host of its own is prompted through the JSON-RPC door
``--turns`` times (600). In its first window (``--window``, 50 turns, after
``WARMUP_TURNS``, 10) and in its last (turns 551-600), each turn is paired
with a **plain POST of the same conversation** (the user and assistant
messages so far in the Anthropic wire's form, encoded and sent with httpx,
its JSON answer read) from this process to the same provider, the two in
alternating order; the turns between the windows are only taken. Compared,
the median of the **last window against the first**:

- **the host's CPU per turn** (the subject, target **within 1.5x**): every
  thread of the host process (``/proc/PID/task/*/schedstat``,
  nanoseconds) over the turn: JSON-RPC both ways, the turn's guard, copy and
  redaction, the request to the provider, storing the turn. If a turn's work
  is the new turn's, it stays flat while the history grows; only sending
  the longer body (a copy into the kernel) grows with it. This does not
  move when other processes take the cores;
- the host's **excess over a plain POST**, in CPU time (less this thread's
  over the POST, ``time.thread_time``) and in wall time (the turn's round
  trip less the POST's), informative: what the host spends beyond a client
  that encodes and sends the conversation itself. It falls below zero as
  the conversation grows: the host encodes a turn's new messages only
  (``oma_host/providers/wire_prefix.py``), such a client all of them.

``--sessions`` (5) repeats the whole session, each with a new host, and
pools the samples.

The provider is ``bench/asyncio_provider.py`` in its own process, which
answers every request with the same Anthropic reply (as the provider
simulator renders it) without parsing the conversation. The simulator in
this process would compete with this process's own POSTs for the
interpreter (it parses and keeps every request). The hosts keep their state
on tmpfs where there is one: each turn is stored as always, but the disk's
fsync (the same for every turn, and slow to vary on a shared machine) stays
out of the figure.

``--host-tree DIR`` runs the hosts from another checkout (its directory on
``PYTHONPATH``), for a before/after in the same minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.concurrency import provider
from bench.harness import Comparison, format_comparison, fresh_state
from oma_host.cli.client import HostClient, host_argv

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "history_growth.json"
TURNS = 600
SESSIONS = 5
WINDOW = 50
WARMUP_TURNS = 10
TARGET = 1.5
KEY = "bench-key-not-secret"
ANSWER = "hi there"  # what bench/asyncio_provider.py answers
PROMPT = "lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor "
TIMEOUT_S = 60.0
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
# tmpfs, where there is one, for the hosts' state.
STATE_PARENT = "/dev/shm" if Path("/dev/shm").is_dir() else None


def _prompt(turn: int) -> str:
    return f"turn {turn}: {PROMPT * 3}"


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def _cpu_s(pid: int) -> float:
    """The CPU time of every thread of process ``pid`` so far."""
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):  # a thread that just ended
            continue
    return total / 1e9


@dataclass
class Costs:
    """One pair's costs, in seconds."""

    turn_wall: float
    turn_cpu: float
    post_wall: float
    post_cpu: float


@dataclass
class Session:
    """The host's stored session, and the same conversation kept here for
    the plain POSTs."""

    host: HostClient
    pid: int
    agent: str
    turns: int = 0
    conversation: list[dict[str, Any]] = field(default_factory=list)

    async def turn(self) -> tuple[float, float]:
        """One ``agent/prompt``: its wall time and the host's CPU time."""
        prompt = _prompt(self.turns)
        cpu = _cpu_s(self.pid)
        start = time.perf_counter()
        result = await self.host.request(
            "agent/prompt", {"agentId": self.agent, "input": prompt}, timeout=TIMEOUT_S
        )
        wall = time.perf_counter() - start
        cpu = _cpu_s(self.pid) - cpu
        if not result["success"] or result["output"] != ANSWER:
            raise RuntimeError(f"turn {self.turns} failed: {result['status']}")
        self.turns += 1
        self.conversation += [_text("user", prompt), _text("assistant", ANSWER)]
        return wall, cpu

    async def post(
        self, http: httpx.AsyncClient, url: str, *, after_turn: bool = False
    ) -> tuple[float, float]:
        """The plain POST of the conversation the next turn sends (the last
        turn's, ``after_turn``): its wall time and this thread's CPU time."""
        if after_turn:
            messages = self.conversation[:-1]
        else:
            messages = [*self.conversation, _text("user", _prompt(self.turns))]
        body = {"model": "sim", "max_tokens": 4096, "messages": messages}
        cpu = time.thread_time()
        start = time.perf_counter()
        response = await http.post(url, json=body, headers=HEADERS)
        answer = response.json()
        wall = time.perf_counter() - start
        cpu = time.thread_time() - cpu
        if answer["content"][0]["text"] != ANSWER:
            raise RuntimeError(f"a plain POST was answered {answer}")
        return wall, cpu

    async def pair(self, http: httpx.AsyncClient, url: str) -> Costs:
        """A turn and the POST of the same conversation, in alternating order
        (the host's work after answering, its run trace, must not fall on
        the POST alone)."""
        if self.turns % 2:
            post = await self.post(http, url)
            turn = await self.turn()
        else:
            turn = await self.turn()
            post = await self.post(http, url, after_turn=True)
        return Costs(turn[0], turn[1], post[0], post[1])


async def _session(
    base_url: str, turns: int, window: int, host_tree: str | None
) -> dict[str, list[Costs]]:
    """One host and one session: its first and last windows measured."""
    state = tempfile.mkdtemp(prefix="oma-bench-history-", dir=STATE_PARENT)
    argv, env = host_argv("--state-dir", state), None
    if host_tree:
        # -P: ``python -m`` would put the working directory (this checkout,
        # most often) before PYTHONPATH and run this checkout's host.
        argv, env = [argv[0], "-P", *argv[1:]], {"PYTHONPATH": host_tree}
    host = await HostClient.spawn(argv, env=env)
    http = httpx.AsyncClient(timeout=TIMEOUT_S)
    url = f"{base_url}/v1/messages"
    windows: dict[str, list[Costs]] = {"first": [], "last": []}
    try:
        await host.initialize()
        assert host.process is not None
        config = {
            "name": "growing",
            "provider": "anthropic",
            "model": "sim",
            "baseURL": base_url,
            "apiKey": KEY,
        }
        created = await host.request("agent/create", {"config": config, "sessionId": "growing"})
        session = Session(host, host.process.pid, created["agentId"])
        for _ in range(WARMUP_TURNS):
            await session.turn()
        for _ in range(window):
            windows["first"].append(await session.pair(http, url))
        while session.turns < turns - window:
            await session.turn()
        for _ in range(window):
            windows["last"].append(await session.pair(http, url))
        return windows
    finally:
        await http.aclose()
        await host.close()
        shutil.rmtree(state, ignore_errors=True)


def _comparison(
    key: str, what: str, pooled: dict[str, list[float]], names: dict[str, str], target: float | None
) -> Comparison:
    return Comparison(
        key=key,
        title=f"History growth, {what}: last window vs first",
        baseline=names["first"],
        subject=names["last"],
        samples={names[window]: pooled[window] for window in ("first", "last")},
        unit_note=", samples in ms",
        target=target,
    )


async def run_history_growth(
    turns: int = TURNS, window: int = WINDOW, sessions: int = SESSIONS, host_tree: str | None = None
) -> list[Comparison]:
    if turns - window < WARMUP_TURNS + window:
        raise SystemExit(f"--turns {turns} is too few for two windows of {window}")
    measured: dict[str, list[Costs]] = {"first": [], "last": []}
    async with provider(0) as base_url:
        for _ in range(sessions):
            for name, costs in (await _session(base_url, turns, window, host_tree)).items():
                measured[name] += costs
    names = {
        "first": f"turns {WARMUP_TURNS + 1}-{WARMUP_TURNS + window}",
        "last": f"turns {turns - window + 1}-{turns} ({2 * turns} messages)",
    }
    cpu = {k: [(c.turn_cpu - c.post_cpu) * 1000 for c in v] for k, v in measured.items()}
    wall = {k: [(c.turn_wall - c.post_wall) * 1000 for c in v] for k, v in measured.items()}
    host = {k: [c.turn_cpu * 1000 for c in v] for k, v in measured.items()}
    posts = {k: [c.post_cpu * 1000 for c in v] for k, v in measured.items()}
    by_host = _comparison("history_growth_host_cpu", "the host's CPU per turn", host, names, TARGET)
    for window_name in ("first", "last"):
        post = sorted(posts[window_name])[len(posts[window_name]) // 2]
        by_host.notes.append(
            f"{names[window_name]}: a plain POST of the same conversation costs its "
            f"client {post:.3f} ms of CPU (median)"
        )
    by_host.notes.append(f"{sessions} session(s) of {turns} turns, each in a new host")
    excess = [
        _comparison("history_growth_cpu", "CPU time over a plain POST", cpu, names, None),
        _comparison("history_growth_wall", "wall time over a plain POST", wall, names, None),
    ]
    for comparison in excess:
        comparison.notes.append(
            "below zero the host spent less than the POST's client; read the difference "
            "of medians, not the ratio"
        )
    return [by_host, *excess]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/history_growth.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=TURNS, help="turns of each session")
    parser.add_argument("--window", type=int, default=WINDOW, help="turns per window")
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="sessions, each its host")
    parser.add_argument(
        "--quick", action="store_true", help="one session of 150 turns, windows of 20"
    )
    parser.add_argument("--host-tree", help="run the hosts from this checkout")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON report path")
    args = parser.parse_args(argv)
    turns, window, sessions = (args.turns, args.window, args.sessions)
    if args.quick:
        turns, window, sessions = 150, 20, 1
    with fresh_state():
        comparisons = asyncio.run(run_history_growth(turns, window, sessions, args.host_tree))
    print("\n\n".join(format_comparison(comparison) for comparison in comparisons))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {comparison.key: comparison.to_json() for comparison in comparisons}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
