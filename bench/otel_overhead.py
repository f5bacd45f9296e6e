"""Benchmark: what the OpenTelemetry export costs, at start and per run.

``python3 bench/otel_overhead.py [--rounds N] [--quick] [--out FILE]``

Two comparisons, each interleaved round by round (``bench.harness``):

- **cold start**: spawn to the ``initialize`` response of ``oma-host`` with
  no ``OTEL_*`` variable (baseline) and with ``OTEL_EXPORTER_OTLP_ENDPOINT``
  set: the SDK is imported on the first exported run, never before the
  answer, so the two should not differ;
- **per run**: one ``agent/run`` of an LLM agent with two ``file_read`` tool
  calls (two provider requests against the provider simulator, five spans),
  on a running host with telemetry off (baseline), on (spans exported over
  OTLP/HTTP to a receiver on 127.0.0.1), and on with content capture. Each
  host is started, and its first run made, before anything is measured.

The simulator and the receiver run in threads of this process, shared by
every variant alike; the receiver answers each export at once without
decoding it, so what is measured is the host's side.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import Comparison, format_comparison, fresh_state, interleave_async
from bench.startup import ARGV, OMA_HOST, spawn_and_initialize
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.script import RecordedRequest, Reply
from oma_host.testing.simulator import Simulator

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "otel_overhead.json"
OFF = "telemetry off"
ON = "telemetry on (OTLP/HTTP to 127.0.0.1)"
CAPTURE = "telemetry on, content captured"
CONFIGURED = "OTEL_EXPORTER_OTLP_ENDPOINT set"
TIMEOUT_S = 30.0
KEY = "sk-ant-bench-otel-key"


class _Collector:
    """An OTLP/HTTP endpoint that takes every export and answers 200 at once."""

    def __init__(self) -> None:
        self.exports = 0
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                collector.exports += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _two_tool_calls(request: RecordedRequest) -> Reply:
    """Two file reads first; once their results come back, the answer."""
    last = request.body["messages"][-1]["content"]
    if isinstance(last, list) and any(block.get("type") == "tool_result" for block in last):
        return Reply.text("both files read")
    return Reply(
        content=[
            {"type": "tool_use", "id": "c1", "name": "file_read", "input": {"path": "a.txt"}},
            {"type": "tool_use", "id": "c2", "name": "file_read", "input": {"path": "b.txt"}},
        ]
    )


async def _host(sim: Simulator, work: str, env: dict[str, str]) -> tuple[HostClient, str]:
    client = await HostClient.spawn(host_argv(), env={"ANTHROPIC_API_KEY": KEY, **env})
    await client.initialize()
    config = {
        "name": "reader",
        "provider": "anthropic",
        "model": "sim-1",
        "baseURL": sim.base_url,
        "tools": ["file_read"],
        "cwd": work,
    }
    agent_id: str = (await client.request("agent/create", {"config": config}))["agentId"]
    return client, agent_id


async def run_per_run(rounds: int, warmup: int = 5) -> Comparison:
    collector = _Collector()
    hosts: list[HostClient] = []
    with Simulator() as sim, tempfile.TemporaryDirectory() as work:
        sim.responder = _two_tool_calls
        for name in ("a.txt", "b.txt"):
            (Path(work) / name).write_text(f"the text of {name}\n")
        exporting = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
        envs = {
            OFF: {},
            ON: exporting,
            CAPTURE: {**exporting, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
        }
        try:
            variants = {}
            for name, env in envs.items():
                client, agent_id = await _host(sim, work, env)
                hosts.append(client)
                variants[name] = _run_sample(client, agent_id)
                await variants[name]()  # the first run loads the LLM backend (and the SDK)
            samples = await interleave_async(variants, rounds, warmup)
        finally:
            for client in hosts:
                await client.close()
            collector.close()
    return Comparison(
        key="otel_per_run",
        title="per run: agent/run with two tool calls (5 spans) against the simulator",
        baseline=OFF,
        subject=ON,
        samples=samples,
        notes=[
            f"{collector.exports} OTLP exports received (the batch processor's schedule)",
            "the simulator and the receiver are threads of the benchmark process",
        ],
    )


def _run_sample(client: HostClient, agent_id: str) -> Any:
    async def sample() -> float:
        start = time.perf_counter()
        result = await client.request(
            "agent/run", {"agentId": agent_id, "input": "read both"}, timeout=TIMEOUT_S
        )
        elapsed = time.perf_counter() - start
        if result["output"] != "both files read" or len(result["toolCalls"]) != 2:
            raise RuntimeError(f"unexpected result {result}")
        return elapsed

    return sample


async def run_cold_start(rounds: int, warmup: int = 1) -> Comparison:
    def variant(env: dict[str, str] | None) -> Any:
        async def sample() -> float:
            return (await spawn_and_initialize(ARGV[OMA_HOST], env)).seconds

        return sample

    configured = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    samples = await interleave_async(
        {OFF: variant(None), CONFIGURED: variant(configured)}, rounds, warmup
    )
    return Comparison(
        key="otel_cold_start",
        title="cold start: spawn -> initialize response",
        baseline=OFF,
        subject=CONFIGURED,
        samples=samples,
        notes=["the SDK is imported on the first exported run, after initialize"],
    )


def main(argv: list[str] | None = None) -> int:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="bench/otel_overhead.py", description=__doc__)
    parser.add_argument("--rounds", type=int, default=100, help="interleaved rounds (100)")
    parser.add_argument("--quick", action="store_true", help="10 rounds: a smoke run")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON report path")
    args = parser.parse_args(argv)
    rounds = 10 if args.quick else args.rounds
    with fresh_state():
        comparisons = [
            asyncio.run(run_cold_start(max(rounds // 5, 4))),
            asyncio.run(run_per_run(rounds)),
        ]
    for comparison in comparisons:
        print(format_comparison(comparison))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = {comparison.key: comparison.to_json() for comparison in comparisons}
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
