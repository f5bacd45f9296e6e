"""HostClient reads the host's output with the host's own frame reader
(:func:`oma_host.wire.framing.read_frames`): output that is not LSP-framed ends
the reading with a ConnectionError that says so, and a request nobody answers
times out; both against a real process."""

from __future__ import annotations

import sys

import pytest

from oma_host.cli.client import HostClient


async def test_output_that_is_not_framed_fails_the_requests_and_says_so() -> None:
    """A "host" that answers with a header block and no Content-Length."""
    script = (
        "import sys; sys.stdin.buffer.read(1)\n"
        "sys.stdout.write('Content-Type: x\\r\\n\\r\\n{}'); sys.stdout.flush(); sys.stdin.read()"
    )
    client = await HostClient.spawn([sys.executable, "-c", script])
    try:
        with pytest.raises(ConnectionError, match="not LSP-framed JSON: a header block without"):
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
