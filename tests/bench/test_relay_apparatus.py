"""The relay benchmark's apparatus (``bench/providers.py``): the streaming
provider in its own process (``bench/asyncio_provider.py``), read through the
host by ``HostClient``."""

from __future__ import annotations

import json
import time

import httpx
from httpx_sse import aconnect_sse

from bench.asyncio_provider import relay_text
from bench.concurrency import provider
from oma_host.cli.client import HostClient, host_argv


async def test_the_host_relays_the_providers_stream_delta_by_delta() -> None:
    async with provider(100) as url:
        client = await HostClient.spawn(host_argv())
        try:
            await client.initialize({})
            config = {
                "name": "relay",
                "provider": "anthropic",
                "model": "sim",
                "baseURL": f"{url}/deltas/300",
                "apiKey": "bench-key",
            }
            agent = (await client.request("agent/create", {"config": config}))["agentId"]
            result = await client.request(
                "agent/stream", {"agentId": agent, "input": "hi", "partialResultToken": "t"}
            )
            assert result["output"] == relay_text(300)
            assert client.progress("t") == [{"type": "text", "data": c} for c in relay_text(300)]
            # The concurrency benchmark's answer, after its latency, on the same server.
            config["baseURL"] = url
            agent = (await client.request("agent/create", {"config": config}))["agentId"]
            started = time.monotonic()
            result = await client.request("agent/run", {"agentId": agent, "input": "hi"})
            assert result["output"] == "hi there"
            assert time.monotonic() - started >= 0.1
        finally:
            await client.close()


async def test_paced_deltas_carry_the_time_of_their_write() -> None:
    async with provider(0) as url, httpx.AsyncClient() as http:
        before = time.perf_counter_ns()
        stamps: list[int] = []
        async with aconnect_sse(
            http,
            "POST",
            f"{url}/deltas/20/paced/2000/v1/messages",
            json={"stream": True, "messages": []},
        ) as source:
            async for event in source.aiter_sse():
                if event.event == "content_block_delta":
                    text = json.loads(event.data)["delta"]["text"]
                    assert text.endswith(";")
                    stamps.append(int(text[:-1]))
        assert len(stamps) == 20
        assert before < stamps[0] and stamps == sorted(stamps)
        assert stamps[-1] - stamps[0] >= 19 * 2_000_000  # 2 ms apart at least
        assert stamps[-1] < time.perf_counter_ns()
