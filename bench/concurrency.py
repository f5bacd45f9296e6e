"""Benchmark 5: many concurrent ``agent/run`` calls on one agent, against a
provider that answers each request after a fixed latency, read against
aiohttp sending the same POSTs to the same server from this process.

The provider is ``bench/asyncio_provider.py`` in its own process: an asyncio
server, so hundreds of concurrent requests cost it next to nothing and the
figure is the client's. One sample is the makespan of one burst: from sending
the first of N requests to holding the last answer. Variants:

- **aiohttp** (baseline): N concurrent POSTs on one ``aiohttp.ClientSession``
  with a 1,000-connection limit, in a process of its own on default settings
  (``bench/aiohttp_client.py``), which times the burst itself;
- **aiohttp in this process, collector off** (informative): the same POSTs
  from the benchmark's process, where the harness keeps the collector out of
  every sample: aiohttp without any collector's cost, which no program on
  default settings gets;
- **oma-host** (subject): N concurrent ``agent/run`` through a host on its
  default HTTP settings (the aiohttp transport, 1,000 connections);
- **oma-host, httpx 64 connections**: the settings the host had before
  (httpx's own transport, 64 connections, 16 kept alive), for before/after in
  the same run;
- **oma-host, httpx 1,000 connections**: httpx's own transport given the new
  limits, to show what the transport itself costs.

Every run must succeed; failures are counted per variant and reported with
the first failure's message. A failed run of the subject is an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from bench import aiohttp_client
from bench.harness import AsyncSample, Comparison, interleave_async
from oma_host.cli.client import HostClient, host_argv

AIOHTTP = "aiohttp, limit 1000, own process"
AIOHTTP_HERE = "aiohttp in this process, collector off"
HOST = "oma-host agent/run (default: aiohttp transport)"
HOST_OLD = "oma-host, httpx 64 connections (before)"
HOST_HTTPX = "oma-host, httpx 1000 connections"
FLOOR = "floor: bare JSON-RPC relay on aiohttp"
HOSTS: dict[str, dict[str, Any]] = {
    HOST: {},
    HOST_OLD: {"transport": "httpx", "maxConnections": 64, "maxKeepAliveConnections": 16},
    HOST_HTTPX: {"transport": "httpx"},
    FLOOR: {},  # bench/floor_host.py, not a host: what any Python host on aiohttp costs at least
}
TARGET = 1.3
KEY = "bench-key-not-secret"
PROVIDER = Path(__file__).resolve().parent / "asyncio_provider.py"
FLOOR_HOST = Path(__file__).resolve().parent / "floor_host.py"
AIOHTTP_CLIENT = Path(__file__).resolve().parent / "aiohttp_client.py"


@dataclass(frozen=True)
class Case:
    """N concurrent runs at a provider latency, in ``rounds`` rounds without
    warm-up, or else the run's round count after one warm-up round. The
    ratio is ``subject``'s; ``suffix`` tells a case apart from another of
    the same size (the before-variants' own rounds)."""

    concurrency: int
    latency_ms: int
    rounds: int | None = None
    variants: tuple[str, ...] = (AIOHTTP, HOST, FLOOR, AIOHTTP_HERE)
    subject: str = HOST
    suffix: str = ""

    @property
    def key(self) -> str:
        return f"concurrency_{self.concurrency}_at_{self.latency_ms}ms{self.suffix}"


# The transports of before take 1-25 s a round at 100 ms: in the subject's
# rounds they left its connections idle past their keep-alive expiry (5 s,
# httpx's and the official SDKs' default), so the host measured reconnecting
# a thousand connections a round, where aiohttp (15 s) did not. They are
# measured in rounds of their own, against the same baseline.
FULL = (
    Case(200, 100),
    Case(1000, 100),
    Case(200, 100, variants=(AIOHTTP, HOST_OLD, HOST_HTTPX), subject=HOST_OLD, suffix="_before"),
    # httpx's own pool needs ~20 s a round here: measured at 200 runs only.
    Case(1000, 100, variants=(AIOHTTP, HOST_OLD), subject=HOST_OLD, suffix="_before"),
    Case(500, 6000, rounds=1, variants=(AIOHTTP, HOST, HOST_OLD, HOST_HTTPX)),
)
QUICK = (
    Case(200, 100),
    Case(1000, 100),
    Case(200, 100, variants=(AIOHTTP, HOST_OLD, HOST_HTTPX), subject=HOST_OLD, suffix="_before"),
    Case(500, 6000, rounds=1, variants=(AIOHTTP, HOST)),
)


@dataclass
class Failures:
    """Failed runs per variant (warm-up rounds included), and the first
    message of each."""

    counts: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)

    def add(self, variant: str, message: str) -> None:
        self.counts[variant] = self.counts.get(variant, 0) + 1
        self.first.setdefault(variant, message)


@contextlib.asynccontextmanager
async def provider(latency_ms: int) -> AsyncIterator[str]:
    """The asyncio provider in its own process; yields its base URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROVIDER),
        "--latency-ms",
        str(latency_ms),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        yield f"http://127.0.0.1:{int(line.split()[-1])}"
    finally:
        process.kill()
        await process.wait()


@dataclass
class BaselineClient:
    """``bench/aiohttp_client.py``, the baseline, in its own process."""

    process: asyncio.subprocess.Process

    @classmethod
    @contextlib.asynccontextmanager
    async def spawn(cls) -> AsyncIterator[BaselineClient]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(AIOHTTP_CLIENT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        try:
            yield cls(process)
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()

    async def burst(self, url: str, n: int, failures: Failures, limit_s: float) -> float:
        """N POSTs to ``url``; the makespan the process measured."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{url} {n}\n".encode())
        line = await asyncio.wait_for(self.process.stdout.readline(), limit_s)
        if not line:
            raise RuntimeError("bench/aiohttp_client.py ended without a report")
        report = json.loads(line)
        for message in report["failures"]:
            failures.add(AIOHTTP, message)
        return float(report["elapsed_s"])


async def _drain(stream: asyncio.StreamReader | None) -> None:
    """Read a host's stderr so that its logging never blocks on a full pipe."""
    if stream is not None:
        while await stream.read(65536):
            pass


@contextlib.asynccontextmanager
async def hosts(names: set[str]) -> AsyncIterator[dict[str, HostClient]]:
    """One initialized host per host variant."""
    clients: dict[str, HostClient] = {}
    drains: list[asyncio.Task[None]] = []
    try:
        for name in names & set(HOSTS):
            argv = [sys.executable, str(FLOOR_HOST)] if name == FLOOR else host_argv()
            client = await HostClient.spawn(argv)
            assert client.process is not None
            drains.append(asyncio.ensure_future(_drain(client.process.stderr)))
            await client.initialize({"http": HOSTS[name]})
            clients[name] = client
        yield clients
    finally:
        for client in clients.values():
            await client.close()
        for drain in drains:
            drain.cancel()


async def _host_burst(
    client: HostClient, agent: str, n: int, variant: str, failures: Failures, limit_s: float
) -> float:
    start = time.perf_counter()
    futures = [
        client.start_request("agent/run", {"agentId": agent, "input": "hello"})[1] for _ in range(n)
    ]
    answers = await asyncio.wait_for(asyncio.gather(*futures), limit_s)
    elapsed = time.perf_counter() - start
    for answer in answers:
        result = answer.get("result")
        if result is None or not result.get("success"):
            detail = (result or {}).get("errorInfo") or answer.get("error")
            failures.add(variant, json.dumps(detail))
    return elapsed


async def _aiohttp_burst(
    session: aiohttp.ClientSession, url: str, n: int, failures: Failures
) -> float:
    """The baseline's burst from this process (the informative variant)."""
    elapsed_s, failed = await aiohttp_client.burst(session, url, n)
    for message in failed:
        failures.add(AIOHTTP_HERE, message)
    return elapsed_s


async def run_case(
    case: Case,
    base_url: str,
    clients: dict[str, HostClient],
    baseline: BaselineClient,
    session: aiohttp.ClientSession,
    rounds: int,
) -> Comparison:
    failures = Failures()
    config = {"name": "c", "provider": "anthropic", "model": "bench", "baseURL": base_url}
    config["apiKey"] = KEY
    limit_s = 120.0 + case.latency_ms / 1000 * case.concurrency / 32
    variants: dict[str, AsyncSample] = {}
    for name in case.variants:
        if name == AIOHTTP:
            url = f"{base_url}/v1/messages"
            variants[name] = functools.partial(
                baseline.burst, url, case.concurrency, failures, limit_s
            )
        elif name == AIOHTTP_HERE:
            url = f"{base_url}/v1/messages"
            variants[name] = functools.partial(
                _aiohttp_burst, session, url, case.concurrency, failures
            )
        else:
            client = clients[name]
            agent = (await client.request("agent/create", {"config": config}))["agentId"]
            variants[name] = functools.partial(
                _host_burst, client, agent, case.concurrency, name, failures, limit_s
            )
    own_rounds = case.rounds or rounds
    warmup = 0 if case.rounds else 1
    samples = await interleave_async(variants, own_rounds, warmup)
    comparison = Comparison(
        key=case.key,
        title=(
            f"{case.concurrency} concurrent agent/run, provider latency {case.latency_ms} ms "
            "(makespan of the burst)"
            + (", the transports of before in rounds of their own" if case.suffix else "")
        ),
        baseline=AIOHTTP,
        subject=case.subject,
        samples=samples,
        target=TARGET if case.latency_ms <= 1000 and case.subject == HOST else None,
    )
    total = case.concurrency * (own_rounds + warmup)
    for name in case.variants:
        count = failures.counts.get(name, 0)
        note = f"{name}: {count} of {total} runs failed"
        if count:
            note += f" (first: {failures.first[name][:300]})"
        comparison.notes.append(note)
    if failures.counts.get(HOST):
        raise RuntimeError(f"{case.key}: runs failed through the host: {failures.first[HOST]}")
    return comparison


async def run_concurrency_benchmarks(rounds: int, quick: bool) -> list[Comparison]:
    cases = QUICK if quick else FULL
    comparisons = []
    names = {name for case in cases for name in case.variants}
    connector = aiohttp.TCPConnector(limit=1000)
    async with (
        hosts(names) as clients,
        BaselineClient.spawn() as baseline,
        aiohttp.ClientSession(connector=connector) as session,
    ):
        for case in cases:
            print(f"  concurrency: {case.key}", file=sys.stderr, flush=True)
            async with provider(case.latency_ms) as base_url:
                comparisons.append(
                    await run_case(case, base_url, clients, baseline, session, rounds)
                )
    return comparisons
