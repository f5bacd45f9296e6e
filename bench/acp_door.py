"""Benchmark: one prompt turn through the ACP door (``oma-host acp``)
against the same turn through the JSON-RPC door (``oma-host``).

``python3 bench/acp_door.py [--rounds N] [--quick] [--out FILE]``

Both doors serve the same LLM agent against the provider simulator, which
runs in this process and answers every request with ``"hello"`` in one
streamed chunk. Each door is spawned, initialized and given a stored session
before anything is measured; a sample is then one turn of ``"hi"`` that
grows that session's history and is committed to the door's store:

- **JSON-RPC door** (baseline): ``agent/prompt`` on an agent created with a
  ``sessionId``, through ``oma_host.cli.client.HostClient``;
- **ACP door**: ``session/prompt`` through the ``agent-client-protocol``
  library's client, which also receives the turn's ``agent_message_chunk``
  and ``usage_update`` notifications.

Target: the ACP door within 1.2x of the JSON-RPC door. Variants are
interleaved round by round (``bench.harness``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from bench.acp_overhead import acp_turn_sampler
from bench.harness import Comparison, interleave_async, run_standalone
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "acp_door.json"
INPUT = "hi"
REPLY = "hello"
JSON_RPC = "JSON-RPC door agent/prompt"
ACP_DOOR = "ACP door session/prompt"
TIMEOUT_S = 30.0
TARGET = 1.2


async def run_acp_door(rounds: int, warmup: int = 5) -> Comparison:
    stack: list[Any] = []
    with Simulator() as sim, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        sim.script(*(Reply.text(REPLY, chunk_size=64) for _ in range(2 * (rounds + warmup) + 2)))
        config = {
            "name": "bench",
            "provider": "anthropic",
            "model": "bench-model",
            "baseURL": sim.base_url,
            "apiKey": "sk-bench",
        }
        client = await HostClient.spawn(host_argv("--state-dir", str(state / "json-rpc")))
        try:
            await client.initialize()
            created = await client.request("agent/create", {"config": config, "sessionId": "bench"})
            params = {"agentId": created["agentId"], "input": INPUT}

            async def json_rpc_turn() -> float:
                start = time.perf_counter()
                result = await client.request("agent/prompt", params, timeout=TIMEOUT_S)
                elapsed = time.perf_counter() - start
                if result["output"] != REPLY or result["status"]["code"] != "ok":
                    raise RuntimeError(f"agent/prompt: unexpected result {result}")
                return elapsed

            agents = state / "agents.json"
            agents.write_text(json.dumps([config]))
            acp_argv = ["acp", "--agents", str(agents), "--state-dir", str(state / "acp")]
            acp_turn = await acp_turn_sampler(
                stack, INPUT, REPLY, str(state), *host_argv(*acp_argv)
            )
            samples = await interleave_async(
                {JSON_RPC: json_rpc_turn, ACP_DOOR: acp_turn}, rounds, warmup
            )
        finally:
            for spawned in reversed(stack):
                await spawned.__aexit__(None, None, None)
            await client.close()
    return Comparison(
        key="acp_door",
        title=f"a prompt turn ({INPUT!r} -> {REPLY!r}) through each door, history growing",
        baseline=JSON_RPC,
        subject=ACP_DOOR,
        samples=samples,
        target=TARGET,
        notes=[
            "each door spawned, initialized and its stored session opened before measuring",
            "both commit every turn to their SQLite store before answering",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    return run_standalone("bench/acp_door.py", __doc__, DEFAULT_OUT, run_acp_door, argv)


if __name__ == "__main__":
    sys.exit(main())
