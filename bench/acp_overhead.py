"""Benchmark: the per-turn overhead of an ACP agent run through oma-host,
against the same turn driven directly with the ACP library's client.

``python3 bench/acp_overhead.py [--rounds N] [--quick] [--out FILE]``

Both sides talk to the same peer, the scripted agent of the interop tests
(``tests/interop/acp_agent/agent.mjs``, built on the official TypeScript SDK;
``npm ci`` in that folder first). Each side starts its own agent process and
session before anything is measured; a sample is then one turn, ``"hello"``
answered by one text chunk and ``end_turn``:

- **direct** (baseline): ``ClientSideConnection.prompt`` of the
  ``agent-client-protocol`` library, in this process, over the agent's stdio;
- **oma-host**: ``agent/run`` to a running host, which does the same prompt
  through its bridge and answers with an AgentRunResult;
- **oma-host agent/stream**: the same with the chunk sent as ``$/progress``;
- **agent/list round trip**: the host's JSON-RPC cost alone, no agent.

Variants are interleaved round by round (``bench.harness``), so a busy
moment hits all of them alike. Reported: median, p90, min, the ratio of
medians to the direct turn, and the difference in ms (the overhead).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import acp
from acp.schema import ClientCapabilities, FileSystemCapabilities, TextContentBlock

from bench.harness import Comparison, interleave_async, run_standalone
from oma_host.cli.client import HostClient, host_argv

REPO_ROOT = Path(__file__).resolve().parent.parent
AGENT_DIR = REPO_ROOT / "tests" / "interop" / "acp_agent"
AGENT_SCRIPT = str(AGENT_DIR / "agent.mjs")
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "acp_overhead.json"
INPUT = "hello"
EXPECTED = f"you said: {INPUT}"
DIRECT = "direct ACP client (acp library)"
HOST_RUN = "oma-host agent/run (acp backend)"
HOST_STREAM = "oma-host agent/stream (acp backend)"
RPC_ONLY = "oma-host agent/list round trip"
TIMEOUT_S = 30.0


class TextCollector:
    """The smallest ACP client: keeps the text of agent message chunks."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        content = getattr(update, "content", None)
        if isinstance(content, TextContentBlock):
            self.parts.append(content.text)


async def acp_turn_sampler(
    stack: list[Any], prompt: str, expected: str, cwd: str, command: str, *args: str
) -> Any:
    """Spawn an ACP agent, open a session in ``cwd``, and return the timed
    turn: ``prompt`` answered by ``expected`` and ``end_turn``."""
    collector = TextCollector()
    spawned = acp.spawn_agent_process(collector, command, *args)
    conn, _process = await spawned.__aenter__()
    stack.append(spawned)
    await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
        ),
    )
    session = await conn.new_session(cwd=cwd, mcp_servers=[])

    async def turn() -> float:
        collector.parts.clear()
        start = time.perf_counter()
        response = await asyncio.wait_for(
            conn.prompt(session_id=session.session_id, prompt=[acp.text_block(prompt)]), TIMEOUT_S
        )
        elapsed = time.perf_counter() - start
        if response.stop_reason != "end_turn" or "".join(collector.parts) != expected:
            raise RuntimeError(f"ACP turn: {response.stop_reason}, {collector.parts}")
        return elapsed

    return turn


async def run_acp_overhead(rounds: int, warmup: int = 5) -> Comparison:
    stack: list[Any] = []
    client = await HostClient.spawn(host_argv())
    try:
        await client.initialize()
        config = {
            "name": "b",
            "backend": {"kind": "acp", "command": "node", "args": [AGENT_SCRIPT]},
        }
        created = await client.request("agent/create", {"config": config})
        agent_id = created["agentId"]
        tokens = iter(range(1_000_000))

        async def host_call(method: str) -> float:
            params: dict[str, Any] = {"agentId": agent_id, "input": INPUT}
            if method == "agent/stream":
                params["partialResultToken"] = f"t{next(tokens)}"
            start = time.perf_counter()
            result = await client.request(method, params, timeout=TIMEOUT_S)
            elapsed = time.perf_counter() - start
            if result["output"] != EXPECTED or result["status"]["code"] != "ok":
                raise RuntimeError(f"{method}: unexpected result {result}")
            return elapsed

        async def host_run() -> float:
            return await host_call("agent/run")

        async def host_stream() -> float:
            elapsed = await host_call("agent/stream")
            client.notifications.clear()  # keep the client's record from growing
            return elapsed

        async def rpc_round_trip() -> float:
            start = time.perf_counter()
            await client.request("agent/list", {}, timeout=TIMEOUT_S)
            return time.perf_counter() - start

        await host_run()  # starts the agent process and its session: not measured
        direct_turn = await acp_turn_sampler(
            stack, INPUT, EXPECTED, str(REPO_ROOT), "node", AGENT_SCRIPT
        )
        samples = await interleave_async(
            {
                DIRECT: direct_turn,
                HOST_RUN: host_run,
                HOST_STREAM: host_stream,
                RPC_ONLY: rpc_round_trip,
            },
            rounds,
            warmup,
        )
    finally:
        for spawned in reversed(stack):
            await spawned.__aexit__(None, None, None)
        await client.close()
    return Comparison(
        key="acp_overhead",
        title=f"ACP backend: one turn ({INPUT!r} -> one chunk, end_turn) on a live session",
        baseline=DIRECT,
        subject=HOST_RUN,
        samples=samples,
        notes=[
            "both sides start their agent process and session before measuring",
            f"'{RPC_ONLY}' is the host's JSON-RPC share of the overhead (no agent)",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    if not (AGENT_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        print(f"run `npm ci` in {AGENT_DIR} first", file=sys.stderr)
        return 2
    return run_standalone("bench/acp_overhead.py", __doc__, DEFAULT_OUT, run_acp_overhead, argv)


if __name__ == "__main__":
    sys.exit(main())
