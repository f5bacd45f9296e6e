"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError
from oma_host.server import close_http_client, close_telemetry
from oma_host.server.app import HostSession, SessionOptions

PY = sys.executable


class HostFactory:
    """Spawns real hosts over stdio for one test (``spawn_host`` in
    tests/conftest.py) and closes every one it started when the test ends."""

    def __init__(self) -> None:
        self.clients: list[HostClient] = []

    async def __call__(
        self,
        argv: Sequence[str] | None = None,
        *,
        env: dict[str, str] | None = None,
        options: dict[str, Any] | None = None,
        initialize: bool = True,
    ) -> HostClient:
        """A host run with ``argv`` (``python -m oma_host`` by default) and
        ``env`` added to the test's environment, initialized with
        ``options`` as its ``initializationOptions`` unless ``initialize``
        is False."""
        client = await HostClient.spawn(argv, env=env)
        self.clients.append(client)
        if initialize:
            await client.initialize(options)
        return client

    async def close_all(self) -> None:
        """shutdown + exit every host still running, the last started first."""
        while self.clients:
            await self.clients.pop().close()


class InProcessFactory:
    """Serves hosts in the test's process for one test (``serve_host`` in
    tests/conftest.py; see :class:`InProcessHost`), each with ``env`` set in
    the test's environment for the rest of the test, and closes every one
    it served when the test ends: :class:`HostFactory`'s counterpart for
    tests whose subject is not the process."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.clients: list[InProcessHost] = []

    async def __call__(
        self,
        session: SessionOptions | None = None,
        *,
        env: dict[str, str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> InProcessHost:
        """A host served with ``session`` (the command line's choices, e.g.
        ``state_dir``), initialized with ``options``."""
        for name, value in (env or {}).items():
            self.monkeypatch.setenv(name, value)
        client = await InProcessHost.serve(session)
        self.clients.append(client)
        await client.initialize(options)
        return client

    async def close_all(self) -> None:
        """shutdown + exit every host still serving, the last served first."""
        while self.clients:
            await self.clients.pop().close()


@dataclass
class InProcessHost(HostClient):
    """A client of the real server (:class:`HostSession`, what ``oma-host``
    serves on stdio) run in the test's own process and event loop: the
    client's frames reach the session through one in-memory stream and its
    answers come back through another, the bytes a pipe would carry. For
    protocol tests whose subject is not the process: there is no argv, no
    stderr, no signal or exit status of a process, and the host's
    environment and working directory are the test's."""

    serving: asyncio.Task[int] | None = None

    @classmethod
    async def serve(cls, options: SessionOptions | None = None) -> InProcessHost:
        """A session served with ``options`` (by default the command line's:
        ``--framing auto``), not yet initialized. The process's shared HTTP
        client, if an earlier test left one, is closed first, so that the
        session starts as a new host process would."""
        await close_http_client()
        to_session = asyncio.StreamReader(limit=2**24)
        to_client = asyncio.StreamReader(limit=2**24)

        def write(data: bytes) -> None:  # as a pipe whose reader has gone
            if to_client.at_eof():
                raise BrokenPipeError("the test client reads no more")
            to_client.feed_data(data)

        session = HostSession(write, options or SessionOptions(framing="auto"))
        client = cls(to_client, to_session.feed_data)
        client.serving = asyncio.ensure_future(session.serve(to_session))
        client.serving.add_done_callback(lambda _: to_client.feed_eof())
        client.start()
        return client

    async def close(self, timeout: float = 20) -> int:
        """shutdown + exit (exit even when shutdown is refused), then the
        session's exit code; closing a session that has ended returns it."""
        assert self.serving is not None
        if not self.serving.done():
            with contextlib.suppress(Exception):
                await self.request("shutdown", timeout=timeout)
            with contextlib.suppress(Exception):
                self.notify("exit")
        return await self.wait(timeout)

    async def wait(self, timeout: float = 20) -> int:
        """The session's exit code once it has served its last frame (a
        session still serving after ``timeout`` is cancelled, as Ctrl-C
        would, and the TimeoutError raised); the shared clients a host closes
        on its way out are closed too, since the next test has another loop."""
        assert self.serving is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self.serving), timeout)
        except TimeoutError:
            self.serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.serving
            raise
        finally:
            await close_telemetry()
            await close_http_client()


@contextlib.asynccontextmanager
async def served_host(
    env: dict[str, str], options: dict[str, Any] | None = None
) -> AsyncIterator[InProcessHost]:
    """A host served in the test's process (see :class:`InProcessHost`),
    initialized with ``options``, with ``env`` set in the test's environment
    while it serves, as a spawned host would have it; closed on the way out."""
    with pytest.MonkeyPatch.context() as environment:
        for name, value in env.items():
            environment.setenv(name, value)
        client = await InProcessHost.serve()
        try:
            await client.initialize(options)
            yield client
        finally:
            await client.close()


async def expect_error(call: Awaitable[Any], code: int, type_name: str) -> RpcError:
    """Await a request that must fail with ``code`` and ``error.data.type``."""
    with pytest.raises(RpcError) as caught:
        await call
    error = caught.value
    assert error.code == code, error
    assert isinstance(error.data, dict) and error.data.get("type") == type_name, error.data
    return error


async def create(client: HostClient, **config: Any) -> str:
    result = await client.request("agent/create", {"config": config})
    agent_id: str = result["agentId"]
    return agent_id


def process_config(name: str, script: str, **backend: Any) -> dict[str, Any]:
    """A process-backend agent running a ``sh -c`` script."""
    return {
        "name": name,
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script], **backend},
    }


def pid_alive(pid: int) -> bool:
    """Whether the process runs: a zombie (exited, not yet reaped) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state to tell. The process may
    # be reaped between the two: the open then fails with ENOENT, or the read
    # with ESRCH, and either means it is gone.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_for_pid(pid_file: Path) -> int:
    """The pid a started command wrote to ``pid_file`` (``echo $$ > FILE``)."""
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the process agent never started"
        time.sleep(0.02)
    return int(pid_file.read_text())


def wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


async def wait_dead_async(pid: int, timeout: float = 10.0) -> bool:
    """:func:`wait_dead` from a test's event loop, without holding it."""
    return await asyncio.to_thread(wait_dead, pid, timeout)


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def wait_for_file(path: Path) -> str:
    """The stripped contents of ``path`` once a test process has written it."""
    for _ in range(400):
        if path.exists() and (text := path.read_text().strip()):
            return text
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never appeared")


def received(result: dict[str, Any]) -> list[dict[str, Any]]:
    """What the ``test`` provider (model echo) was sent, read back from its reply."""
    messages: list[dict[str, Any]] = json.loads(result["output"])["messages"]
    return messages


async def wait_for_progress(client: HostClient, token: Any, count: int = 1) -> None:
    """Wait until ``count`` ``$/progress`` events for ``token`` have arrived."""
    for _ in range(400):
        if len(client.progress(token)) >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"fewer than {count} progress events for {token!r} arrived")


def read_tcp_banner(banner: bytes, token_line: bytes) -> tuple[int, Path]:
    """The port and token file of a ``--tcp`` host, from the first two
    lines it writes on stderr."""
    port = int(banner.decode().rsplit(":", 1)[1])
    line = token_line.decode()
    assert line.startswith("oma-host token file: "), line
    return port, Path(line.split(": ", 1)[1].strip())


class TcpHost:
    """A real ``oma-host --tcp 0`` keeping its token under ``runtime_dir``
    (its ``XDG_RUNTIME_DIR``); its stderr is collected in ``log``."""

    def __init__(self, process: asyncio.subprocess.Process, port: int, token_file: Path) -> None:
        self.process = process
        self.port = port
        self.token_file = token_file
        self.log: list[str] = []
        self._drain = asyncio.ensure_future(self._collect())

    @classmethod
    async def start(cls, runtime_dir: Path, *flags: str, listen: str = "0") -> TcpHost:
        process = await asyncio.create_subprocess_exec(
            PY,
            "-m",
            "oma_host",
            "--tcp",
            listen,
            *flags,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "XDG_RUNTIME_DIR": str(runtime_dir)},
        )
        assert process.stderr is not None
        try:
            banner = await asyncio.wait_for(process.stderr.readline(), 30)
            token_line = await asyncio.wait_for(process.stderr.readline(), 30)
            port, token_file = read_tcp_banner(banner, token_line)
        except BaseException:
            process.kill()  # a host that did not start as expected is not left behind
            await process.wait()
            raise
        return cls(process, port, token_file)

    async def _collect(self) -> None:
        assert self.process.stderr is not None
        async for line in self.process.stderr:
            self.log.append(line.decode(errors="replace"))

    @property
    def token(self) -> str:
        return self.token_file.read_text().strip()

    async def open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.port, limit=2**24)

    async def client(self) -> HostClient:
        """A HostClient connected and initialized with the token."""
        client = await HostClient.connect("127.0.0.1", self.port, token_file=self.token_file)
        await client.initialize()
        return client

    async def stop(self) -> int:
        """SIGTERM, as a service manager stops it; its exit code."""
        if self.process.returncode is None:
            self.process.terminate()
        try:
            code = await asyncio.wait_for(self.process.wait(), 30)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        await self._drain
        return code


async def read_until_closed(reader: asyncio.StreamReader, timeout: float = 30) -> bytes:
    """Everything the host sends before it closes the connection (a reset counts)."""
    data = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), timeout):
            data += chunk
    return data


# As deep as a frame may nest and still parse (the JSON parser's recursion limit).
PARSEABLE_DEPTH = 600


def nested_object(depth: int = PARSEABLE_DEPTH) -> dict[str, Any]:
    """``{"a": {"a": ...}}``, ``depth`` objects deep."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return deep


def peak_rss_bytes(pid: int) -> int:
    """The high-water mark of a process's resident memory (``VmHWM``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM line in /proc/{pid}/status")
