"""Benchmark: one prompt turn through the ACP door (``oma-host acp``)
against the same turn through the JSON-RPC door (``oma-host``).

``python3 bench/acp_door.py [--rounds N] [--quick] [--out FILE]``

Both doors serve the same LLM agent against the provider simulator, which
runs in this process and answers every request with ``"hello"`` in one
streamed chunk. Each door is spawned, initialized and given a stored session
before anything is measured; a sample is then one turn of ``"hi"`` that
grows that session's history and is committed to the door's store:

- **JSON-RPC door, streamed** (baseline): ``agent/prompt`` with a
  ``partialResultToken`` on an agent created with a ``sessionId``, through
  ``oma_host.cli.client.HostClient``: the same work as an ACP turn, which
  always streams (the client receives the turn's events before the answer);
- **ACP door** (subject): ``session/prompt`` from a client as thin as
  ``HostClient`` (newline-delimited JSON written and read by a few lines of
  code here), which also receives the turn's ``agent_message_chunk`` and
  ``usage_update`` notifications: the door's cost, not a client library's;
- **ACP door, acp library client** (informative): the same turn through the
  ``agent-client-protocol`` library's client, which validates every message
  with pydantic models, as an editor built on that library would;
- **JSON-RPC door, not streamed** (informative): ``agent/prompt`` alone, the
  baseline before ``agent/prompt`` could stream.

Target: the ACP door within 1.2x of the JSON-RPC door. Variants are
interleaved round by round (``bench.harness``).
"""

from __future__ import annotations

import asyncio
import itertools
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
JSON_RPC = "JSON-RPC door agent/prompt, streamed"
JSON_RPC_PLAIN = "JSON-RPC door agent/prompt, not streamed"
ACP_DOOR = "ACP door session/prompt"
ACP_DOOR_LIBRARY = "ACP door session/prompt, acp library client"
TIMEOUT_S = 30.0
TARGET = 1.2


class RawAcpClient:
    """An ACP client as thin as ``HostClient``: JSON lines written and read
    by hand, no models. Enough for initialize, session/new and prompt turns
    (it advertises no client capabilities, so the door asks it nothing)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._ids = itertools.count(1)

    @classmethod
    async def spawn(cls, argv: list[str]) -> RawAcpClient:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=16 * 1024 * 1024,
        )
        return cls(process)

    async def call(self, method: str, params: Any) -> tuple[Any, list[dict[str, Any]]]:
        """Send a request; its result and the notifications that came first."""
        assert self._process.stdin is not None and self._process.stdout is not None
        msg_id = next(self._ids)
        frame = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self._process.stdin.write(json.dumps(frame).encode() + b"\n")
        notifications: list[dict[str, Any]] = []
        while True:
            line = await self._process.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: oma-host acp closed its output")
            message = json.loads(line)
            if "method" in message:
                notifications.append(message)
            elif message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"], notifications

    async def turn_sampler(self, prompt: str, expected: str, cwd: str) -> Any:
        """Initialize, open a session in ``cwd``, and return the timed turn."""
        capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        session, _ = await self.call("session/new", {"cwd": cwd, "mcpServers": []})
        params = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": prompt}]}

        async def turn() -> float:
            start = time.perf_counter()
            result, updates = await asyncio.wait_for(self.call("session/prompt", params), TIMEOUT_S)
            elapsed = time.perf_counter() - start
            text = "".join(
                update["params"]["update"]["content"]["text"]
                for update in updates
                if update["params"]["update"].get("sessionUpdate") == "agent_message_chunk"
            )
            if result["stopReason"] != "end_turn" or text != expected:
                raise RuntimeError(f"ACP turn: {result}, {text!r}")
            return elapsed

        return turn

    async def __aexit__(self, *exc: object) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 10)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()


async def run_acp_door(rounds: int, warmup: int = 5) -> Comparison:
    stack: list[Any] = []
    with Simulator() as sim, tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        sim.script(*(Reply.text(REPLY, chunk_size=64) for _ in range(4 * (rounds + warmup) + 2)))
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
            streamed = {**params, "partialResultToken": "bench"}

            async def prompt_turn(turn_params: dict[str, Any]) -> float:
                start = time.perf_counter()
                result = await client.request("agent/prompt", turn_params, timeout=TIMEOUT_S)
                elapsed = time.perf_counter() - start
                if result["output"] != REPLY or result["status"]["code"] != "ok":
                    raise RuntimeError(f"agent/prompt: unexpected result {result}")
                return elapsed

            async def json_rpc_turn() -> float:
                return await prompt_turn(streamed)

            async def json_rpc_plain_turn() -> float:
                return await prompt_turn(params)

            agents = state / "agents.json"
            agents.write_text(json.dumps([config]))

            def acp_argv(state_dir: str) -> list[str]:
                return host_argv(
                    "acp", "--agents", str(agents), "--state-dir", str(state / state_dir)
                )

            acp_library_turn = await acp_turn_sampler(
                stack, INPUT, REPLY, str(state), *acp_argv("acp-library")
            )
            raw = await RawAcpClient.spawn(acp_argv("acp"))
            stack.append(raw)
            acp_turn = await raw.turn_sampler(INPUT, REPLY, str(state))
            samples = await interleave_async(
                {
                    JSON_RPC: json_rpc_turn,
                    ACP_DOOR: acp_turn,
                    ACP_DOOR_LIBRARY: acp_library_turn,
                    JSON_RPC_PLAIN: json_rpc_plain_turn,
                },
                rounds,
                warmup,
            )
            if not client.progress("bench"):
                raise RuntimeError("agent/prompt with a partialResultToken streamed nothing")
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
            "both stream the turn's events to the client before the answer",
        ],
    )


def main(argv: list[str] | None = None) -> int:
    return run_standalone("bench/acp_door.py", __doc__, DEFAULT_OUT, run_acp_door, argv)


if __name__ == "__main__":
    sys.exit(main())
