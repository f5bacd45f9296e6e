"""Frames stay within bounds both ways: the host writes every byte of a frame,
never builds one above --max-message-bytes, and takes no header value it
cannot hold."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import threading

from oma_host.cli.client import HostClient, host_argv
from oma_host.server.app import stdout_writer
from oma_host.wire.framing import encode_frame
from tests.server.helpers import create, expect_error, process_config


def test_the_writer_writes_a_frame_whole_when_the_pipe_takes_it_in_parts() -> None:
    """A pipe in non-blocking mode takes what fits (64 KiB) and refuses the
    rest for now, as a 2 GiB frame is cut by one write(2) on a blocking one."""
    read_end, write_end = os.pipe()
    flags = fcntl.fcntl(write_end, fcntl.F_GETFL)
    fcntl.fcntl(write_end, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    frame = bytes(range(256)) * 8192  # 2 MiB
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(read_end, 65536):
            received.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        stdout_writer(write_end)(frame)
    finally:
        os.close(write_end)
        reader.join(30)
        os.close(read_end)
    assert bytes(received) == frame


async def test_an_answer_over_the_limit_is_replaced_by_an_error_saying_so() -> None:
    client = await HostClient.spawn(host_argv("--max-message-bytes", "2000"))
    try:
        await client.initialize()
        agent = await create(client, **process_config("big", "head -c 5000 /dev/zero | tr '\\0' x"))
        error = await expect_error(
            client.request(
                "agent/stream", {"agentId": agent, "input": "x", "partialResultToken": 1}
            ),
            -32603,
            "ResponseTooLarge",
        )
        assert "over the limit of 2000 (--max-message-bytes)" in error.message
        assert error.data["limit"] == 2000 and error.data["size"] > 10_000
        # No frame above the limit came out (a progress event over it was left out).
        for message in client.received:
            body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
            assert len(body) <= 2000, body[:200]
        assert await client.request("agent/list", {}) == {
            "agents": [{"agentId": agent, "name": "big", "backend": "process"}]
        }
    finally:
        assert await client.close() == 0


async def test_a_request_to_the_client_over_the_limit_fails_the_run_unsent() -> None:
    client = await HostClient.spawn(host_argv("--max-message-bytes", "3000"))
    try:
        await client.initialize()
        client.handlers["agent/beforeRun"] = lambda params: None
        config = {"name": "h", "provider": "test", "model": "echo", "hooks": {"beforeRun": True}}
        agent = await create(client, **config)
        result = await client.request("agent/run", {"agentId": agent, "input": "y" * 2500})
        assert result["success"] is False and result["errorInfo"]["kind"] == "callback"
        assert "was not sent" in result["output"]
        assert client.server_requests == []
    finally:
        assert await client.close() == 0


async def test_a_content_length_of_thousands_of_digits_is_a_parse_error(host: HostClient) -> None:
    host.send_bytes(b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n")
    host.send_bytes(encode_frame(b'{"jsonrpc":"2.0","id":5,"method":"agent/list"}'))
    for _ in range(400):
        errors = [m for m in host.received if m.get("id") is None and "error" in m]
        if errors:
            break
        await asyncio.sleep(0.025)
    assert errors[0]["error"]["code"] == -32700
    assert "at most 15 digits" in errors[0]["error"]["message"]
    assert await host.request("agent/list", {}) == {"agents": []}
