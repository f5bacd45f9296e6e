"""The relay benchmark's apparatus (``bench/providers.py``): the streaming
provider in its own process (``bench/asyncio_provider.py``) and the client
that reads the host's frames in batches (``bench/fast_client.py``)."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
from httpx_sse import aconnect_sse
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.asyncio_provider import relay_text
from bench.concurrency import provider
from bench.fast_client import FastHostClient, parse_frames
from oma_host.cli.client import host_argv
from oma_host.server.framing import encode_frame, read_frames

_MESSAGE = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params"]),
    st.one_of(st.integers(), st.text(max_size=5), st.lists(st.text(max_size=3), max_size=3)),
)


@settings(max_examples=100, deadline=None)
@given(
    messages=st.lists(_MESSAGE, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=8),
    extra_header=st.booleans(),
)
def test_frames_are_read_as_the_hosts_frame_reader_reads_them(
    messages: list[dict[str, object]], cuts: list[int], extra_header: bool
) -> None:
    """Whole frames however the pipe cuts them, ASCII or not, with a second
    header or not: the messages ``read_frames`` reads, in order."""
    frames = []
    for message in messages:
        body = json.dumps(message, ensure_ascii=False).encode()
        frame = encode_frame(body)
        if extra_header:
            frame = frame.replace(b"\r\n\r\n", b"\r\nContent-Type: application/json\r\n\r\n", 1)
        frames.append(frame)
    data = b"".join(frames)

    async def expected() -> list[object]:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return [frame.message async for frame in read_frames(reader)]

    points = sorted({cut % (len(data) + 1) for cut in cuts} | {len(data)})
    buffer = bytearray()
    got: list[object] = []
    start = 0
    for point in points:
        buffer += data[start:point]
        start = point
        got += parse_frames(buffer)
    assert got == asyncio.run(expected())
    assert not buffer


async def test_the_host_relays_the_providers_stream_delta_by_delta() -> None:
    async with provider(100) as url:
        client = await FastHostClient.spawn(host_argv())
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
