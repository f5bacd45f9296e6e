"""Benchmark 4: LLM requests through oma-host, each read against a raw httpx
call to the same provider made from this process in the same run.

- Per-request overhead: one non-streaming ``agent/run`` (Anthropic wire
  format) against the provider simulator (in this process) versus one raw
  ``POST /v1/messages`` with httpx. The difference is what the host adds:
  JSON-RPC both ways, the guard, the adapter's mapping, the result record.
- Streaming relay, throughput: one ``agent/stream`` of a reply made of N
  text deltas, written at once by ``bench/asyncio_provider.py`` in its own
  process, versus reading the same SSE stream with httpx-sse directly;
  reported as deltas per second reaching the client as ``$/progress``, every
  one checked, in order. (Host and client are two processes, so the relay
  can beat a single process that parses the SSE itself.) The client,
  :class:`oma_host.cli.client.HostClient`, reads every frame the pipe holds
  in one pass and costs less per message than the host. The CPU per delta
  of the host and of this process is reported.
- Streaming relay, latency: deltas paced at 0.5 ms by the same provider;
  for each one, the time from its write to the client's receipt
  (``time.perf_counter_ns()``, a system-wide clock on Linux, read by both
  processes). The added latency per delta is the host's median minus the raw
  reader's.

The host on its default transport (aiohttp) is the subject of each; a second
host on httpx's own transport (``initializationOptions.http.transport:
"httpx"``, what the host ran on before) is measured beside it in the same
rounds, so the transport's share shows before/after in one run.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from bench.asyncio_provider import relay_text
from bench.concurrency import provider
from bench.harness import AsyncSample, Comparison, interleave_async
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator

HOST_RUN = "oma-host agent/run (anthropic wire)"
HOST_RUN_HTTPX = "oma-host agent/run, httpx transport"
RAW_RUN = "raw httpx POST /v1/messages"
HOST_STREAM = "oma-host agent/stream relay"
HOST_STREAM_HTTPX = "oma-host agent/stream, httpx transport"
RAW_STREAM = "raw httpx-sse read"
KEY = "bench-key-not-secret"
REQUEST_TIMEOUT_S = 120.0
TRANSPORTS = ("aiohttp", "httpx")
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S


def _body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "sim",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    if stream:
        body["stream"] = True
    return body


async def _agent(client: HostClient, base_url: str) -> str:
    config = {
        "name": "bench",
        "provider": "anthropic",
        "model": "sim",
        "baseURL": base_url,
        "apiKey": KEY,
    }
    agent: str = (await client.request("agent/create", {"config": config}))["agentId"]
    return agent


async def run_provider_benchmarks(rounds: int, deltas: int, warmup: int = 2) -> list[Comparison]:
    with Simulator() as sim:
        async with provider(0) as streams_url:
            return await _run(sim, streams_url, rounds, deltas, warmup)


async def _run(
    sim: Simulator, streams_url: str, rounds: int, deltas: int, warmup: int
) -> list[Comparison]:
    hosts = {transport: await HostClient.spawn(host_argv()) for transport in TRANSPORTS}
    http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S)
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    try:
        agents: dict[str, dict[str, str]] = {"run": {}, "relay": {}, "paced": {}}
        for transport, client in hosts.items():
            await client.initialize({"http": {"transport": transport}})
            agents["run"][transport] = await _agent(client, sim.base_url)
            agents["relay"][transport] = await _agent(client, f"{streams_url}/deltas/{deltas}")
            agents["paced"][transport] = await _agent(
                client, f"{streams_url}/deltas/{PACED_DELTAS}/paced/{round(PACE_S * 1e6)}"
            )
        per_request = await _per_request(hosts, agents["run"], sim, http, headers, rounds, warmup)
        stream_rounds = max(3, rounds // 5)
        relay = await _relay(
            hosts, agents["relay"], streams_url, http, headers, deltas, stream_rounds
        )
        latency = await _latency(hosts, agents["paced"], streams_url, http, headers, stream_rounds)
    finally:
        await http.aclose()
        for client in hosts.values():
            await client.close()
    return [per_request, relay, latency]


async def _per_request(
    hosts: dict[str, HostClient],
    agents: dict[str, str],
    sim: Simulator,
    http: httpx.AsyncClient,
    headers: dict[str, str],
    rounds: int,
    warmup: int,
) -> Comparison:
    short = Reply.text("hi there")
    url = f"{sim.base_url}/v1/messages"

    def host_run(transport: str) -> AsyncSample:
        client, agent = hosts[transport], agents[transport]

        async def sample() -> float:
            sim.script(short)
            start = time.perf_counter()
            await client.request("agent/run", {"agentId": agent, "input": "hello"})
            return time.perf_counter() - start

        return sample

    async def raw_run() -> float:
        sim.script(short)
        start = time.perf_counter()
        response = await http.post(url, headers=headers, json=_body(False))
        response.json()
        return time.perf_counter() - start

    samples = await interleave_async(
        {RAW_RUN: raw_run, HOST_RUN: host_run("aiohttp"), HOST_RUN_HTTPX: host_run("httpx")},
        rounds,
        warmup,
    )
    return Comparison(
        key="provider_request",
        title="one non-streaming LLM request through the host vs raw httpx, same simulator",
        baseline=RAW_RUN,
        subject=HOST_RUN,
        samples=samples,
        notes=["host spawned and the agent created before measuring"],
    )


async def _relay(
    hosts: dict[str, HostClient],
    agents: dict[str, str],
    streams_url: str,
    http: httpx.AsyncClient,
    headers: dict[str, str],
    deltas: int,
    rounds: int,
) -> Comparison:
    url = f"{streams_url}/deltas/{deltas}/v1/messages"
    text = relay_text(deltas)
    expected = [{"type": "text", "data": piece} for piece in text]
    # Per sample, CPU seconds: the host's, and this process's (the client).
    cpu: dict[str, list[tuple[float, float]]] = {HOST_STREAM: [], HOST_STREAM_HTTPX: []}
    tokens = iter(range(10**9))

    def host_stream(name: str, transport: str) -> AsyncSample:
        client, agent = hosts[transport], agents[transport]
        assert client.process is not None
        pid = client.process.pid

        async def sample() -> float:
            token = f"bench-{next(tokens)}"
            host_cpu, own_cpu = _cpu_s(pid), time.process_time()
            start = time.perf_counter()
            result = await client.request(
                "agent/stream",
                {"agentId": agent, "input": "hello", "partialResultToken": token},
                timeout=REQUEST_TIMEOUT_S,
            )
            elapsed = time.perf_counter() - start
            cpu[name].append((_cpu_s(pid) - host_cpu, time.process_time() - own_cpu))
            # Every delta, in order (the characters cycle), and the whole text.
            received = client.progress(token)
            if result["output"] != text or received != expected:
                pairs = enumerate(zip(received, expected, strict=False))
                wrong = next((i for i, (a, b) in pairs if a != b), min(len(received), deltas))
                raise RuntimeError(
                    f"{name}: the relay lost deltas or changed their order: {len(received)} "
                    f"of {deltas} arrived, the first wrong at {wrong}: {received[wrong:][:3]}"
                )
            client.notifications.clear()
            client.received.clear()
            return elapsed

        return sample

    async def raw_stream() -> float:
        start = time.perf_counter()
        pieces = []
        async with aconnect_sse(http, "POST", url, headers=headers, json=_body(True)) as source:
            async for event in source.aiter_sse():
                if event.event == "content_block_delta":
                    pieces.append(json.loads(event.data)["delta"]["text"])
        elapsed = time.perf_counter() - start
        if "".join(pieces) != text or len(pieces) != deltas:
            raise RuntimeError(f"raw stream saw {len(pieces)} deltas")
        return elapsed

    samples = await interleave_async(
        {
            RAW_STREAM: raw_stream,
            HOST_STREAM: host_stream(HOST_STREAM, "aiohttp"),
            HOST_STREAM_HTTPX: host_stream(HOST_STREAM_HTTPX, "httpx"),
        },
        rounds,
        1,
    )
    relay = Comparison(
        key="stream_relay",
        title=f"streaming relay of {deltas} text deltas, provider process → host → client",
        baseline=RAW_STREAM,
        subject=HOST_STREAM,
        samples=samples,
    )
    for name in (HOST_STREAM, HOST_STREAM_HTTPX):
        per_second = deltas / (relay.median(name) / 1000)
        measured = cpu[name][-rounds:]  # the warm-up round's left out
        host_us = statistics.median(h for h, _ in measured) / deltas * 1e6
        client_us = statistics.median(c for _, c in measured) / deltas * 1e6
        relay.notes.append(
            f"{name}: {per_second:,.0f} deltas/s reach the client as $/progress, none lost; "
            f"CPU per delta: host {host_us:.1f} µs, client (this process) {client_us:.1f} µs"
        )
    return relay


PACED_DELTAS = 2000
PACE_S = 0.0005


async def _latency(
    hosts: dict[str, HostClient],
    agents: dict[str, str],
    streams_url: str,
    http: httpx.AsyncClient,
    headers: dict[str, str],
    rounds: int,
) -> Comparison:
    """Per-delta latency in ms: each delta's text is the time.perf_counter_ns()
    of its write and a ``;``, read against the time it is received."""
    url = f"{streams_url}/deltas/{PACED_DELTAS}/paced/{round(PACE_S * 1e6)}/v1/messages"
    readers = {RAW_STREAM: "", HOST_STREAM: "aiohttp", HOST_STREAM_HTTPX: "httpx"}
    samples: dict[str, list[float]] = {name: [] for name in readers}
    names = list(readers)

    def latency_ms(text: str) -> float:
        return (time.perf_counter_ns() - int(text.rstrip(";"))) / 1e6

    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            received = samples[name]
            if readers[name]:
                client, agent = hosts[readers[name]], agents[readers[name]]
                token = f"latency-{round_index}"

                def on_progress(
                    message: dict[str, Any], token: str = token, into: list[float] = received
                ) -> None:
                    params = message["params"]
                    if params.get("token") == token and params["value"]["type"] == "text":
                        into.append(latency_ms(params["value"]["data"]))

                client.on_notification = on_progress
                await client.request(
                    "agent/stream",
                    {"agentId": agent, "input": "hello", "partialResultToken": token},
                    timeout=REQUEST_TIMEOUT_S,
                )
                client.on_notification = None
                client.notifications.clear()
                client.received.clear()
            else:
                async with aconnect_sse(
                    http, "POST", url, headers=headers, json=_body(True)
                ) as source:
                    async for event in source.aiter_sse():
                        if event.event == "content_block_delta":
                            received.append(latency_ms(json.loads(event.data)["delta"]["text"]))
    comparison = Comparison(
        key="stream_latency",
        title=f"per-delta latency, provider process write → client receipt ({PACED_DELTAS} "
        f"deltas paced at {PACE_S * 1000:g} ms, {rounds} rounds each)",
        baseline=RAW_STREAM,
        subject=HOST_STREAM,
        samples=samples,
        unit_note="; each sample is one delta",
    )
    for name in (HOST_STREAM, HOST_STREAM_HTTPX):
        comparison.notes.append(
            f"{name}: added latency per delta (difference of medians): "
            f"{comparison.diff_ms(name) * 1000:.0f} µs"
        )
    return comparison
