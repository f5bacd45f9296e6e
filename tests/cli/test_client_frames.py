"""HostClient reads the host's output in batches: every complete frame a read
brings is parsed in one pass, exactly as the host's own frame reader reads
them; a message still arriving is left whole for the next read; a header
block without a length ends the reading with a ConnectionError that says so,
against a real process writing it."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_host.cli.client import HostClient, parse_frames
from oma_host.wire.framing import encode_frame, read_frames

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


def test_a_message_still_arriving_is_left_in_the_buffer() -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "result": "x" * 5000}).encode()
    frame = encode_frame(body)
    buffer = bytearray(frame[:3000])
    assert parse_frames(buffer) == []
    assert bytes(buffer) == frame[:3000]
    buffer += frame[3000:]
    assert parse_frames(buffer) == [json.loads(body)]
    assert not buffer


async def test_output_that_is_not_framed_fails_the_requests_and_says_so() -> None:
    """A "host" that answers with a header block and no Content-Length."""
    script = (
        "import sys; sys.stdin.buffer.read(1)\n"
        "sys.stdout.write('Content-Type: x\\r\\n\\r\\n{}'); sys.stdout.flush(); sys.stdin.read()"
    )
    client = await HostClient.spawn([sys.executable, "-c", script])
    try:
        with pytest.raises(ConnectionError, match="not LSP-framed: a header block without"):
            await client.request("agent/list", {}, timeout=30)
    finally:
        assert client.process is not None
        client.process.kill()
        await client.process.wait()


async def test_a_request_without_an_answer_times_out_and_is_forgotten() -> None:
    script = "import sys; sys.stdin.read()"
    client = await HostClient.spawn([sys.executable, "-c", script])
    try:
        with pytest.raises(TimeoutError):
            await client.request("agent/list", {}, timeout=0.2)
        assert client._pending == {}
    finally:
        assert client.process is not None
        client.process.kill()
        await client.process.wait()
