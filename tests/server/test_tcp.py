"""``oma-host --tcp``: the same framing and methods over a loopback socket."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from typing import Any

from oma_host.server.framing import encode_frame, read_frames


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, message: dict[str, Any]
) -> dict[str, Any]:
    writer.write(encode_frame(json.dumps(message).encode()))
    await writer.drain()
    async for frame in read_frames(reader):
        if isinstance(frame.message, dict) and frame.message.get("id") == message["id"]:
            return frame.message
    raise AssertionError("connection closed before the response")


async def test_tcp_listens_on_loopback_and_serves_a_session() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "oma_host", "--tcp", "0", stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        match = re.search(r"listening on ([\d.]+):(\d+)", line)
        assert match, line
        assert match.group(1) == "127.0.0.1"
        reader, writer = await asyncio.open_connection("127.0.0.1", int(match.group(2)))
        init = await _exchange(
            reader, writer, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        )
        assert init["result"]["serverInfo"]["name"] == "oma-host"
        create = await _exchange(
            reader,
            writer,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "agent/create",
                "params": {
                    "config": {"name": "c", "backend": {"kind": "process", "command": "cat"}}
                },
            },
        )
        agent_id = create["result"]["agentId"]
        run = await _exchange(
            reader,
            writer,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "agent/run",
                "params": {"agentId": agent_id, "input": "tcp"},
            },
        )
        assert run["result"]["output"] == "tcp"
        writer.close()
    finally:
        process.terminate()
        await process.wait()


async def test_tcp_takes_a_bracketed_ipv6_address() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "oma_host", "--tcp", "[::1]:0", stderr=asyncio.subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()
        match = re.search(r"listening on (::1):(\d+)", line)
        assert match, line
        reader, writer = await asyncio.open_connection("::1", int(match.group(2)))
        init = await _exchange(
            reader, writer, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        )
        assert init["result"]["serverInfo"]["name"] == "oma-host"
        writer.close()
    finally:
        process.kill()
        await process.wait()


def test_an_unbracketed_ipv6_address_is_refused_with_a_hint() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--tcp", "::1:0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "[::1]:PORT" in done.stderr
    assert "Traceback" not in done.stderr
