"""Benchmarks 4 and 5: LLM requests through oma-host against the provider
simulator, each read against a raw httpx call to the same simulator made from
this process in the same run.

- Per-request overhead: one non-streaming ``agent/run`` (Anthropic wire
  format) versus one raw ``POST /v1/messages`` with httpx. The difference is
  what the host adds: JSON-RPC both ways, the guard, the adapter's mapping,
  the result record.
- Streaming relay, throughput: one ``agent/stream`` of a reply made of N
  text deltas, sent as fast as the simulator can, versus reading the same SSE
  stream with httpx-sse directly; reported as deltas per second reaching the
  client as ``$/progress``. (Host and client are two processes, so the relay
  can beat a single process that parses the SSE itself.)
- Streaming relay, latency: deltas paced at 0.5 ms; for each one, the time
  from the simulator writing it to the client receiving it (the simulator runs
  in this process, so both ends read the same clock). The added latency per
  delta is the host's median minus the raw reader's.

The host on its default transport (aiohttp) is the subject of each; a second
host on httpx's own transport (``initializationOptions.http.transport:
"httpx"``, what the host ran on before) is measured beside it in the same
rounds, so the transport's share shows before/after in one run.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from bench.harness import AsyncSample, Comparison, interleave_async
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import SEND_TIME, Reply, Simulator

HOST_RUN = "oma-host agent/run (anthropic wire)"
HOST_RUN_HTTPX = "oma-host agent/run, httpx transport"
RAW_RUN = "raw httpx POST /v1/messages"
HOST_STREAM = "oma-host agent/stream relay"
HOST_STREAM_HTTPX = "oma-host agent/stream, httpx transport"
RAW_STREAM = "raw httpx-sse read"
KEY = "bench-key-not-secret"
REQUEST_TIMEOUT_S = 120.0


def _body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "sim",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
    }
    if stream:
        body["stream"] = True
    return body


async def run_provider_benchmarks(rounds: int, deltas: int, warmup: int = 2) -> list[Comparison]:
    with Simulator() as sim:
        hosts = {"aiohttp": await HostClient.spawn(host_argv())}
        hosts["httpx"] = await HostClient.spawn(host_argv())
        http = httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S)
        headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
        url = f"{sim.base_url}/v1/messages"
        try:
            agents = {}
            for transport, client in hosts.items():
                await client.initialize({"http": {"transport": transport}})
                config = {
                    "name": "bench",
                    "provider": "anthropic",
                    "model": "sim",
                    "baseURL": sim.base_url,
                    "apiKey": KEY,
                }
                agents[transport] = (await client.request("agent/create", {"config": config}))[
                    "agentId"
                ]
            short = Reply.text("hi there")
            long = Reply.text("x" * deltas, chunk_size=1)

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

            run_samples = await interleave_async(
                {
                    RAW_RUN: raw_run,
                    HOST_RUN: host_run("aiohttp"),
                    HOST_RUN_HTTPX: host_run("httpx"),
                },
                rounds,
                warmup,
            )
            stream_counter = iter(range(10**9))

            def host_stream(transport: str) -> AsyncSample:
                client, agent = hosts[transport], agents[transport]

                async def sample() -> float:
                    sim.script(long)
                    token = f"bench-{next(stream_counter)}"
                    start = time.perf_counter()
                    result = await client.request(
                        "agent/stream",
                        {"agentId": agent, "input": "hello", "partialResultToken": token},
                        timeout=REQUEST_TIMEOUT_S,
                    )
                    elapsed = time.perf_counter() - start
                    if len(result["output"]) != deltas or len(client.progress(token)) != deltas:
                        raise RuntimeError("the relay lost deltas")
                    client.notifications.clear()
                    return elapsed

                return sample

            async def raw_stream() -> float:
                sim.script(long)
                start = time.perf_counter()
                count = 0
                async with aconnect_sse(
                    http, "POST", url, headers=headers, json=_body(True)
                ) as source:
                    async for event in source.aiter_sse():
                        count += event.event == "content_block_delta"
                elapsed = time.perf_counter() - start
                if count != deltas:
                    raise RuntimeError(f"raw stream saw {count} deltas")
                return elapsed

            stream_rounds = max(3, rounds // 5)
            stream_samples = await interleave_async(
                {
                    RAW_STREAM: raw_stream,
                    HOST_STREAM: host_stream("aiohttp"),
                    HOST_STREAM_HTTPX: host_stream("httpx"),
                },
                stream_rounds,
                1,
            )
            latency = await _latency(hosts, agents, sim, http, url, headers, stream_rounds)
        finally:
            await http.aclose()
            for client in hosts.values():
                await client.close()
    per_request = Comparison(
        key="provider_request",
        title="one non-streaming LLM request through the host vs raw httpx, same simulator",
        baseline=RAW_RUN,
        subject=HOST_RUN,
        samples=run_samples,
        notes=["host spawned and the agent created before measuring"],
    )
    relay = Comparison(
        key="stream_relay",
        title=f"streaming relay of {deltas} text deltas, simulator → host → client",
        baseline=RAW_STREAM,
        subject=HOST_STREAM,
        samples=stream_samples,
    )
    for name in (HOST_STREAM, HOST_STREAM_HTTPX):
        per_second = deltas / (relay.median(name) / 1000)
        relay.notes.append(f"{name}: {per_second:,.0f} deltas/s reach the client as $/progress")
    return [per_request, relay, latency]


PACED_DELTAS = 2000
PACE_S = 0.0005


async def _latency(
    hosts: dict[str, HostClient],
    agents: dict[str, str],
    sim: Simulator,
    http: httpx.AsyncClient,
    url: str,
    headers: dict[str, str],
    rounds: int,
) -> Comparison:
    """Per-delta latency in ms: each delta carries the time.perf_counter_ns()
    of its write (SEND_TIME), read against the time it is received."""
    marker = SEND_TIME + ";"
    paced = Reply.text(marker * PACED_DELTAS, chunk_size=len(marker), event_delay_s=PACE_S)
    readers = {RAW_STREAM: "", HOST_STREAM: "aiohttp", HOST_STREAM_HTTPX: "httpx"}
    samples: dict[str, list[float]] = {name: [] for name in readers}
    names = list(readers)

    def latency_ms(text: str) -> float:
        return (time.perf_counter_ns() - int(text.rstrip(";"))) / 1e6

    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            sim.script(paced)
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
            else:
                async with aconnect_sse(
                    http, "POST", url, headers=headers, json=_body(True)
                ) as source:
                    async for event in source.aiter_sse():
                        if event.event == "content_block_delta":
                            received.append(latency_ms(json.loads(event.data)["delta"]["text"]))
    comparison = Comparison(
        key="stream_latency",
        title=f"per-delta latency, simulator write → client receipt ({PACED_DELTAS} deltas "
        f"paced at {PACE_S * 1000:g} ms, {rounds} rounds each)",
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
