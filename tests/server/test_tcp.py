"""``oma-host --tcp``: the same framing and methods over a loopback socket,
for holders of the token only, within bounds (connections, first message,
unsent replies)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.server.tcp import MAX_UNAUTHENTICATED
from oma_host.wire.framing import encode_frame, read_frames
from tests.server.helpers import PY, TcpHost, process_config, read_tcp_banner, read_until_closed


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _initialize(token: str | None = None, msg_id: int = 1) -> dict[str, Any]:
    options = {} if token is None else {"authToken": token}
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "initialize",
        "params": {"capabilities": {}, "initializationOptions": options},
    }


def _touch(marker: Path, msg_id: int = 2) -> dict[str, Any]:
    """A request that, if it ever ran, would leave ``marker`` behind."""
    return {
        "jsonrpc": "2.0",
        "id": msg_id,
        "method": "oma/runAgent",
        "params": {"config": process_config("p", f"touch {marker}"), "input": "x"},
    }


async def test_a_session_with_the_token_runs_and_the_token_file_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = await TcpHost.start(tmp_path)
    try:
        assert host.token_file.parent == tmp_path / "oma-host"
        assert stat.S_IMODE(host.token_file.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(host.token_file.stat().st_mode) == 0o600
        # HostClient finds the token by the port, in the same runtime directory.
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
        client = await HostClient.connect("127.0.0.1", host.port)
        init = await client.initialize()
        assert init["serverInfo"]["name"] == "oma-host"
        created = await client.request(
            "agent/create",
            {"config": {"name": "c", "backend": {"kind": "process", "command": "cat"}}},
        )
        run = await client.request("agent/run", {"agentId": created["agentId"], "input": "tcp"})
        assert run["output"] == "tcp"
        await client.close()
    finally:
        assert await host.stop() == 0
    assert not host.token_file.exists()  # removed when the server stops


@pytest.mark.parametrize("framing", [[], ["--framing", "ndjson"], ["--framing", "lsp"]])
@pytest.mark.parametrize(
    "request_line",
    [b"POST / HTTP/1.1\r\n", b"GET /?q=1 HTTP/1.1\r\n", b"OPTIONS * HTTP/1.1\r\n"],
)
async def test_a_browser_request_is_closed_unread_and_runs_nothing(
    tmp_path: Path, framing: list[str], request_line: bytes
) -> None:
    """What a web page's ``fetch("http://127.0.0.1:PORT", {method: "POST",
    body})`` sends: its body holds a whole ndjson session."""
    marker = tmp_path / "ran"
    host = await TcpHost.start(tmp_path, *framing)
    try:
        reader, writer = await host.open()
        body = _line(_initialize()) + _line(_touch(marker))
        writer.write(
            request_line
            + f"Host: 127.0.0.1:{host.port}\r\nContent-Type: text/plain\r\n".encode()
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        assert await read_until_closed(reader) == b""
        writer.close()
        await asyncio.sleep(0.5)  # a run started anyway would have touched the marker by now
        assert not marker.exists()
        assert any("speaks HTTP" in line for line in host.log), host.log
    finally:
        await host.stop()


@pytest.mark.parametrize("first", ["no token", "wrong token", "not initialize", "garbage"])
async def test_a_connection_without_the_token_runs_nothing(tmp_path: Path, first: str) -> None:
    marker = tmp_path / "ran"
    host = await TcpHost.start(tmp_path)
    try:
        reader, writer = await host.open()
        opening = {
            "no token": _line(_initialize()),
            "wrong token": _line(_initialize("x" * 43)),
            "not initialize": _line(_touch(marker, msg_id=1)),
            "garbage": b"{nope\n",
        }[first]
        writer.write(opening + _line(_initialize(host.token, 3)) + _line(_touch(marker)))
        answers = [json.loads(line) for line in (await read_until_closed(reader)).splitlines()]
        writer.close()
        # At most one answer, the refusal of the initialize that lacked the token.
        assert all(a.get("id") == 1 and a["error"]["code"] == -32600 for a in answers), answers
        await asyncio.sleep(0.5)
        assert not marker.exists()
        # The server goes on serving holders of the token.
        client = await host.client()
        assert await client.request("agent/list", {}) == {"agents": []}
        await client.close()
    finally:
        await host.stop()


async def test_lsp_framing_with_the_token_works(tmp_path: Path) -> None:
    host = await TcpHost.start(tmp_path)
    try:
        reader, writer = await host.open()
        writer.write(encode_frame(json.dumps(_initialize(host.token)).encode()))
        async for frame in read_frames(reader):
            assert frame.message["result"]["serverInfo"]["name"] == "oma-host"
            break
        writer.close()
    finally:
        await host.stop()


async def test_a_connection_silent_past_the_handshake_timeout_is_closed(tmp_path: Path) -> None:
    host = await TcpHost.start(tmp_path, "--handshake-timeout", "0.5")
    try:
        reader, writer = await host.open()
        writer.write(b"Content-Length: 100\r\n")  # a header, and then nothing
        assert await read_until_closed(reader) == b""
        writer.close()
        # An authenticated connection is not timed out.
        client = await host.client()
        await asyncio.sleep(1)
        assert await client.request("agent/list", {}) == {"agents": []}
        await client.close()
    finally:
        await host.stop()


async def test_connections_over_the_limit_are_closed(tmp_path: Path) -> None:
    host = await TcpHost.start(tmp_path, "--max-connections", "2")
    try:
        first = await host.client()
        second = await host.client()
        reader, writer = await host.open()
        writer.write(_line(_initialize(host.token)))
        assert await read_until_closed(reader) == b""
        writer.close()
        await first.close()
        for _ in range(100):  # the first connection's session ends after its exit
            await asyncio.sleep(0.05)
            try:
                third = await host.client()
                break
            except (ConnectionError, asyncio.IncompleteReadError):
                continue
        assert await third.request("agent/list", {}) == {"agents": []}
        await second.close()
        await third.close()
    finally:
        await host.stop()


def _rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


async def test_a_client_that_does_not_read_is_not_read_either(tmp_path: Path) -> None:
    """Backpressure: 3,000 small requests, each answered with 90 KB the client
    does not read. A host that kept reading would hold 270 MB of answers; it
    stops reading once more than --max-message-bytes are unsent."""
    host = await TcpHost.start(tmp_path, "--max-message-bytes", "100000")
    try:
        reader, writer = await host.open()
        writer.write(_line(_initialize(host.token)))
        await reader.readline()
        history = [{"role": "user", "content": [{"type": "text", "text": "h" * 90_000}]}]
        config = {"name": "e", "provider": "test", "model": "echo", "history": history}
        create = {"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": {"config": config}}
        writer.write(_line(create))
        await reader.readline()
        before = _rss_bytes(host.process.pid)
        for index in range(3000):
            params = {"agentId": "agent-1"}
            writer.write(
                _line(
                    {
                        "jsonrpc": "2.0",
                        "id": 10 + index,
                        "method": "agent/history",
                        "params": params,
                    }
                )
            )
        peak = before
        for _ in range(60):  # three seconds for a host that reads regardless to balloon
            await asyncio.sleep(0.05)
            peak = max(peak, _rss_bytes(host.process.pid))
        assert peak - before < 100_000_000, (before, peak)
        # Once the client reads, everything is answered.
        seen = 0
        while seen < 3000:
            message = json.loads(await asyncio.wait_for(reader.readline(), 60))
            seen += message["id"] >= 10
        writer.close()
    finally:
        await host.stop()


async def test_a_client_leaving_too_much_unread_is_dropped(tmp_path: Path) -> None:
    """Runs go on producing output while reading is paused; past four times
    --max-message-bytes unsent, the connection is dropped, not buffered."""
    host = await TcpHost.start(tmp_path, "--max-message-bytes", "100000")
    try:
        # A small receive buffer, so the host's own buffer is what fills up.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", host.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=2**17)
        writer.write(_line(_initialize(host.token)))
        await reader.readline()
        create = {"config": process_config("flood", "head -c 12000000 /dev/zero | tr '\\0' x")}
        writer.write(_line({"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": create}))
        await reader.readline()
        stream = {"agentId": "agent-1", "input": "x", "partialResultToken": "t"}
        writer.write(_line({"jsonrpc": "2.0", "id": 3, "method": "agent/stream", "params": stream}))
        for _ in range(1200):
            if any("unread" in line for line in host.log):
                break
            await asyncio.sleep(0.05)
        received = await read_until_closed(reader, 60)
        ids = {json.loads(line).get("id") for line in received.splitlines() if line.endswith(b"}")}
        assert 3 not in ids, "the run was answered: the connection was not dropped"
        writer.close()
        client = await host.client()  # the host still serves others
        assert await client.request("agent/list", {}) == {"agents": []}
        await client.close()
    finally:
        await host.stop()


async def _oma_host(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "oma_host",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_call_connect_finds_the_token_and_a_token_file_can_be_given(tmp_path: Path) -> None:
    token_file = tmp_path / "my.token"
    token_file.write_text("a-token-of-my-own-of-forty-characters-0\n")
    token_file.chmod(0o600)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    host = await TcpHost.start(runtime, "--token-file", str(token_file))
    try:
        assert host.token == "a-token-of-my-own-of-forty-characters-0"
        env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime)}
        call = ["call", "--connect", f"127.0.0.1:{host.port}"]
        code, out, err = await _oma_host(env, *call, "agent/list")
        assert code == 0, err
        assert json.loads(out) == {"agents": []}
        env["XDG_RUNTIME_DIR"] = str(tmp_path / "elsewhere")
        code, out, err = await _oma_host(env, *call, "--token-file", str(token_file), "agent/list")
        assert code == 0, err
        code, out, err = await _oma_host(env, *call, "agent/list")
        assert code == 2 and "no token file" in err
    finally:
        await host.stop()
    assert token_file.read_text() == "a-token-of-my-own-of-forty-characters-0\n"  # it stays


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "open.token"
    token_file.write_text("x" * 40 + "\n")
    token_file.chmod(0o644)
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--tcp", "0", "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
    )
    assert done.returncode == 2
    assert "open to other users" in done.stderr and "Traceback" not in done.stderr


async def test_tcp_takes_a_bracketed_ipv6_address(tmp_path: Path) -> None:
    host = await TcpHost.start(tmp_path, listen="[::1]:0")
    try:
        reader, writer = await asyncio.open_connection("::1", host.port)
        writer.write(_line(_initialize(host.token)))
        answer = json.loads(await asyncio.wait_for(reader.readline(), 20))
        assert answer["result"]["serverInfo"]["name"] == "oma-host"
        writer.close()
    finally:
        await host.stop()


def test_an_unbracketed_ipv6_address_is_refused_with_a_hint() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--tcp", "::1:0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "[::1]:PORT" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_token_file_with_a_short_token_is_refused(tmp_path: Path) -> None:
    token_file = tmp_path / "short.token"
    token_file.write_text("a" * 31 + "\n")
    token_file.chmod(0o600)
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--tcp", "0", "--token-file", str(token_file)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
    )
    assert done.returncode == 2
    assert "is 31 characters; a token must have at least 32" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("framing", ["lsp", "ndjson"])
async def test_before_the_token_a_large_first_message_is_not_read(
    tmp_path: Path, framing: str
) -> None:
    """Twelve connections each start a 60 MiB first message: each is closed
    as soon as it is over 1 MiB, long before the handshake timeout, and the
    host does not hold their bytes."""
    host = await TcpHost.start(tmp_path, "--handshake-timeout", "120")
    try:
        before = _rss_bytes(host.process.pid)
        opened = [await host.open() for _ in range(12)]
        chunk = b"[" * (2 * 1024 * 1024)
        for _, writer in opened:
            if framing == "lsp":
                writer.write(b"Content-Length: %d\r\n\r\n" % (60 * 1024 * 1024))
            writer.write(chunk)
        for reader, writer in opened:
            assert await read_until_closed(reader, timeout=60) == b""
            writer.close()
        assert _rss_bytes(host.process.pid) - before < 24 * 1024 * 1024
        client = await host.client()
        assert await client.request("agent/list", {}) == {"agents": []}
        await client.close()
    finally:
        await host.stop()


async def test_silent_connections_do_not_lock_out_the_client_with_the_token(
    tmp_path: Path,
) -> None:
    """Seventy sockets that never speak: they are counted apart from the
    served connections, the longest waiting closed as new ones come, and a
    client with the token is served among them."""
    host = await TcpHost.start(tmp_path, "--handshake-timeout", "120")
    silent = []
    try:
        for _ in range(70):
            silent.append(await host.open())
        client = await host.client()
        assert await client.request("agent/list", {}) == {"agents": []}
        await client.close()
        closed = 0
        for reader, _ in silent[:54]:  # the 54 waiting longest were closed for newer ones
            closed += await read_until_closed(reader, timeout=30) == b""
        assert closed == 54
    finally:
        for _, writer in silent:
            writer.close()
        await host.stop()


class _UnreadHost:
    """A real ``oma-host --tcp 0`` whose stderr is a 64 KiB pipe that no one
    reads after its banner, but for :meth:`read_until` and :meth:`end`."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: int, banner: bytes) -> None:
        self.process = process
        self.stderr = stderr
        self.text = banner.decode(errors="replace")
        lines = banner.splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith(b"oma-host listening on"))
        self.port, self.token_file = read_tcp_banner(lines[at], lines[at + 1])

    @classmethod
    async def start(cls, runtime_dir: Path, *flags: str) -> _UnreadHost:
        read_end, write_end = os.pipe()
        fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 65536)
        process = await asyncio.create_subprocess_exec(
            PY,
            "-m",
            "oma_host",
            *flags,
            "--tcp",
            "0",
            stderr=write_end,
            env={**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)},
        )
        os.close(write_end)
        banner = b""
        while b"oma-host token file: " not in banner or not banner.endswith(b"\n"):
            piece = await asyncio.wait_for(asyncio.to_thread(os.read, read_end, 4096), 30)
            assert piece, banner
            banner += piece
        return cls(process, read_end, banner)

    async def open_silent(self, count: int, within_s: float = 30.0) -> list[asyncio.StreamWriter]:
        """Up to ``count`` connections that never speak (fewer if the host
        stops accepting them within ``within_s``)."""
        opened: list[asyncio.StreamWriter] = []
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(within_s):
                for _ in range(count):
                    _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                    opened.append(writer)
        return opened

    async def clients_served(self, count: int) -> int:
        """How many of ``count`` clients with the token get an answer within 10 s each."""
        served = 0
        for _ in range(count):
            client: HostClient | None = None
            try:
                async with asyncio.timeout(10):
                    client = await HostClient.connect(
                        "127.0.0.1", self.port, token_file=self.token_file
                    )
                    await client.initialize()
                    served += await client.request("agent/list", {}) == {"agents": []}
            except TimeoutError:
                pass
            finally:
                if client is not None:
                    await client.close(timeout=2)
        return served

    async def read_until(self, text: str, timeout: float = 30.0) -> None:
        """Read stderr until ``text`` has appeared in it, then stop reading."""
        async with asyncio.timeout(timeout):
            while text not in self.text:
                piece = await asyncio.to_thread(os.read, self.stderr, 65536)
                assert piece, f"stderr ended before {text!r}: {self.text[-2000:]}"
                self.text += piece.decode(errors="replace")

    async def terminate(self) -> float:
        """SIGTERM; the seconds it took to exit (the host is killed after 10)."""
        started = time.monotonic()
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), 10)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        return time.monotonic() - started

    async def end(self) -> str:
        """Kill the host if it still runs; all it wrote on stderr."""
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        if self.stderr >= 0:
            while piece := await asyncio.to_thread(os.read, self.stderr, 65536):
                self.text += piece.decode(errors="replace")
            os.close(self.stderr)
            self.stderr = -1
        return self.text


def _closed_waiting(text: str) -> int:
    """How many connections the host says it closed for newer ones."""
    return sum(
        int(count)
        for count in re.findall(
            r"closed (\d+) connection\(s\) waiting longest to authenticate", text
        )
    )


async def test_silent_connections_make_a_few_log_lines_not_one_each(tmp_path: Path) -> None:
    """Eight hundred silent connections, with the host's stderr a pipe no one
    reads: each one closed for a newer one is counted, not logged, so the
    pipe does not fill and stop the host. Five clients with the token are
    served, SIGTERM ends the host at once, and the count is on stderr."""
    host = await _UnreadHost.start(tmp_path)
    silent: list[asyncio.StreamWriter] = []
    try:
        silent = await host.open_silent(800)
        assert await host.clients_served(5) == 5
        assert await host.terminate() < 5
    finally:
        for writer in silent:
            writer.close()
        text = await host.end()
    assert len(silent) == 800
    # Each silent one past the 16 waiting closed the oldest; so did the first
    # client (the others came when it had shown the token).
    assert _closed_waiting(text) == 800 + 1 - MAX_UNAUTHENTICATED, text
    assert len(text.splitlines()) < 20, text


async def _flood(client: HostClient) -> None:
    """4 MB of notifications, each logged whole at DEBUG; then a request
    that must be answered within 10 s."""
    for _ in range(200):
        client.notify("$/oma-test/padding", {"text": "x" * 20_000})
    async with asyncio.timeout(10):
        assert await client.request("agent/list", {}) == {"agents": []}


async def test_a_full_stderr_drops_log_lines_and_never_stops_the_host(tmp_path: Path) -> None:
    """At ``--log-level DEBUG`` the host logs every message whole; a client
    sends 4 MB of them while the host's stderr is a pipe no one reads. The
    host goes on answering: the lines that do not fit are dropped, and
    counted on stderr once it is read again. Flooded again, the host still
    ends within a couple of seconds of SIGTERM."""
    host = await _UnreadHost.start(tmp_path, "--log-level", "DEBUG")
    try:
        async with asyncio.timeout(10):
            client = await HostClient.connect("127.0.0.1", host.port, token_file=host.token_file)
            await client.initialize()
        await _flood(client)
        await host.read_until("log line(s) dropped")
        assert re.search(r"oma-host WARNING oma_host: \d+ log line\(s\) dropped", host.text)
        await _flood(client)  # the pipe fills again
        assert await host.terminate() < 5
        await client.wait()
    finally:
        text = await host.end()
    assert host.process.returncode == 0
    assert "Fatal Python error" not in text
