"""The providers' HTTP client over the wire, on both transports
(``initializationOptions.http``): every timeout names itself and its value,
connection slots come back however a response ends, proxies and certificates
come from the environment, no cookies are kept, aiohttp loads on the first
provider request only, the Python API runs one event loop after another, and
the settings are the host process's."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import gzip
import json
import socket
import ssl
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from oma_host.cli.client import HostClient, RpcError, host_argv
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.providers.conftest import ANTHROPIC_KEY
from tests.providers.helpers import TRANSPORTS, create_llm
from tests.server.helpers import TcpHost, served_host

pytestmark = pytest.mark.parametrize("transport", TRANSPORTS)


def served(
    transport: str, env: dict[str, str] | None = None, **http: Any
) -> contextlib.AbstractAsyncContextManager[HostClient]:
    """A host on ``transport`` with the given ``http`` settings, served in
    the test's process (the client, not the process, is the subject)."""
    variables = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, **(env or {})}
    return served_host(variables, {"http": {"transport": transport, **http}})


async def run(client: HostClient, agent: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.request(
        "agent/run", {"agentId": agent, "input": "x", **params}
    )
    return result


async def wait_for_request(sim: Simulator) -> None:
    for _ in range(400):
        if sim.requests:
            return
        await asyncio.sleep(0.025)
    raise AssertionError("the simulator got no request")


def failure(result: dict[str, Any], kind: str) -> str:
    """The message of a run that failed with ``kind``."""
    assert result["success"] is False, result
    assert result["errorInfo"]["kind"] == kind, result["errorInfo"]
    message: str = result["errorInfo"]["message"]
    return message


# -- timeouts ---------------------------------------------------------------------


async def test_a_read_timeout_names_itself_and_its_value(sim: Simulator, transport: str) -> None:
    async with served(transport, readTimeoutMs=300) as host:
        agent = await create_llm(host, sim, "anthropic")
        sim.script(Reply.text("late", first_byte_delay_s=1.5))
        message = failure(await run(host, agent), "timeout")
    assert "the read timeout of 0.3 s (http.readTimeoutMs) fired" in message
    assert len(sim.requests) == 1  # a timeout is not retried


async def test_a_stream_that_stalls_names_the_read_timeout(sim: Simulator, transport: str) -> None:
    async with served(transport, readTimeoutMs=300) as host:
        agent = await create_llm(host, sim, "anthropic")
        sim.script(Reply.text("slow", chunk_size=1, event_delay_s=1.5))
        result = await host.request(
            "agent/stream", {"agentId": agent, "input": "x", "partialResultToken": "t"}
        )
    message = failure(result, "timeout")
    assert "the response stalled: the read timeout of 0.3 s" in message


async def test_a_pool_timeout_names_itself_and_its_value(sim: Simulator, transport: str) -> None:
    async with served(transport, maxConnections=1, poolTimeoutMs=200) as host:
        agent = await create_llm(host, sim, "anthropic")
        sim.script(Reply.text("slow", first_byte_delay_s=2), Reply.text("never sent"))
        _, first = host.start_request("agent/run", {"agentId": agent, "input": "x"})
        await wait_for_request(sim)  # the only connection is now busy
        message = failure(await run(host, agent), "timeout")
        assert "the pool timeout of 0.2 s (http.poolTimeoutMs) fired" in message
        assert (await asyncio.wait_for(first, 30))["result"]["output"] == "slow"


@contextlib.contextmanager
def listener(backlog: int) -> Iterator[socket.socket]:
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    server.bind(("127.0.0.1", 0))
    server.listen(backlog)
    with server:
        yield server


async def test_an_upload_the_provider_does_not_take_names_the_write_timeout(
    transport: str,
) -> None:
    # Connections to a listener that never accepts are established by the kernel,
    # which takes bytes until the small receive window and the send buffer are full.
    with listener(8) as server:
        base = f"http://127.0.0.1:{server.getsockname()[1]}"
        async with served(transport, writeTimeoutMs=300) as host:
            config = {"name": "w", "provider": "anthropic", "model": "m", "baseURL": base}
            agent = (await host.request("agent/create", {"config": config}))["agentId"]
            big = "x" * 12_000_000  # more than the kernel buffers take
            message = failure(await run(host, agent, input=big), "timeout")
    assert "the write (upload) timeout of 0.3 s (http.writeTimeoutMs) fired" in message


async def test_a_connect_timeout_names_itself_after_the_retries(transport: str) -> None:
    # With the accept queue full, the kernel drops further handshakes unanswered.
    with listener(0) as server:
        port = server.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        try:
            async with served(transport, connectTimeoutMs=200) as host:
                config = {
                    "name": "c",
                    "provider": "anthropic",
                    "model": "m",
                    "baseURL": f"http://127.0.0.1:{port}",
                }
                agent = (await host.request("agent/create", {"config": config}))["agentId"]
                message = failure(await run(host, agent), "timeout")
        finally:
            for filler in fillers:
                filler.close()
    assert f"could not reach 127.0.0.1:{port} in 3 attempts" in message
    assert "the connect timeout of 0.2 s (http.connectTimeoutMs) fired" in message


async def test_connection_slots_come_back_however_a_response_ends(
    sim: Simulator, transport: str
) -> None:
    """One connection, and a short pool timeout: a slot kept by any of these
    endings would fail the runs after it."""
    async with served(transport, maxConnections=1, poolTimeoutMs=2000) as host:
        agent = await create_llm(host, sim, "anthropic")
        slow = await create_llm(host, sim, "anthropic", timeoutMs=300)
        sim.script(Fault(404, "no such model"))
        failure(await run(host, agent), "provider")
        sim.script(Reply.text("malformed", malformed=True))
        failure(await run(host, agent), "malformed")
        sim.script(Reply.text("cut off in the middle", chunk_size=2, cut_after_events=4))
        stream = {"agentId": agent, "input": "x", "partialResultToken": "t"}
        result = await host.request("agent/stream", stream)
        failure(result, "stream")
        sim.script(Reply.text("aborted", first_byte_delay_s=1))
        assert (await run(host, slow))["status"]["code"] == "timeout"
        for answer in ("one", "two", "three"):
            sim.script(Reply.text(answer))
            assert (await run(host, agent))["output"] == answer


async def test_the_client_keeps_no_cookies(sim: Simulator, transport: str) -> None:
    async with served(transport) as host:
        agent = await create_llm(host, sim, "anthropic")
        sim.script(Reply.text("one", headers={"set-cookie": "session=account-a; Path=/"}))
        sim.script(Reply.text("two", headers={"set-cookie": "session=account-a; Path=/"}))
        assert (await run(host, agent))["output"] == "one"
        other = await create_llm(host, sim, "anthropic", apiKey="another-account")
        assert (await run(host, other))["output"] == "two"
    assert "cookie" not in sim.requests[1].headers


# -- what goes out and what comes back ------------------------------------------------

_MESSAGE = json.dumps(
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "unpacked"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
).encode()


class RawProvider:
    """Answers every request with one raw HTTP response, then closes the
    connection: for answers the simulator does not give (a compressed body,
    a body cut short)."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(self.answer)
        await writer.drain()
        writer.close()


async def _raw_run(transport: str, answer: bytes) -> dict[str, Any]:
    async with RawProvider(answer) as base_url, served(transport) as host:
        config = {"name": "r", "provider": "anthropic", "model": "m", "baseURL": base_url}
        agent = (await host.request("agent/create", {"config": config}))["agentId"]
        return await run(host, agent)


async def test_a_compressed_answer_is_decoded(transport: str) -> None:
    body = gzip.compress(_MESSAGE)
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-encoding: gzip\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert (await _raw_run(transport, answer))["output"] == "unpacked"


async def test_an_answer_cut_short_is_a_stream_error(transport: str) -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(_MESSAGE), _MESSAGE[:40])
    )
    message = failure(await _raw_run(transport, answer), "stream")
    assert "anthropic: the response was cut off: RemoteProtocolError" in message


async def test_credentials_in_the_base_url_go_out_as_basic_auth(
    sim: Simulator, transport: str
) -> None:
    """httpx's auth layer still handles a URL with credentials."""
    async with served(transport) as host:
        base_url = sim.base_url.replace("http://", "http://user:secret@")
        agent = await create_llm(host, sim, "anthropic", baseURL=base_url)
        sim.script(Reply.text("authenticated"))
        assert (await run(host, agent))["output"] == "authenticated"
    credentials = base64.b64encode(b"user:secret").decode()
    assert sim.requests[0].headers["authorization"] == f"Basic {credentials}"
    assert sim.requests[0].headers["x-api-key"] == ANTHROPIC_KEY


async def test_each_request_is_logged_at_info_as_httpx_logs_it(
    sim: Simulator, transport: str
) -> None:
    host = await HostClient.spawn(
        host_argv("--log-level", "INFO"), env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY}
    )
    await host.initialize({"http": {"transport": transport}})
    agent = await create_llm(host, sim, "anthropic")
    sim.script(Reply.text("logged"))
    assert (await run(host, agent))["output"] == "logged"
    assert await host.close() == 0
    assert host.process is not None and host.process.stderr is not None
    stderr = (await host.process.stderr.read()).decode()
    line = f'httpx: HTTP Request: POST {sim.base_url}/v1/messages "HTTP/1.1 200 OK"'
    assert line in stderr, stderr


# -- proxies and certificates -------------------------------------------------------


async def test_http_proxy_carries_requests_for_plain_http(sim: Simulator, transport: str) -> None:
    proxy = sim.base_url.replace("http://", "http://user:secret@")
    env = {"HTTP_PROXY": proxy, "NO_PROXY": ""}
    async with served(transport, env) as host:
        config = {"name": "p", "provider": "anthropic", "model": "m"}
        config["baseURL"] = "http://provider.invalid"  # only the proxy knows the way
        agent = (await host.request("agent/create", {"config": config}))["agentId"]
        sim.script(Reply.text("via the proxy"))
        assert (await run(host, agent))["output"] == "via the proxy"
    assert sim.requests[0].path == "http://provider.invalid/v1/messages"
    credentials = base64.b64encode(b"user:secret").decode()
    assert sim.requests[0].headers["proxy-authorization"] == f"Basic {credentials}"


async def test_no_proxy_hosts_are_reached_directly(sim: Simulator, transport: str) -> None:
    env = {"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"}  # a dead proxy
    async with served(transport, env) as host:
        agent = await create_llm(host, sim, "anthropic")
        sim.script(Reply.text("direct"))
        assert (await run(host, agent))["output"] == "direct"


class ConnectProxy:
    """An HTTPS proxy: answers CONNECT and pipes the bytes both ways."""

    def __init__(self) -> None:
        self.connects: list[str] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self._tunnel, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _tunnel(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, target, _ = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[0].split()
        assert method == b"CONNECT"
        self.connects.append(target.decode())
        host, port = target.decode().rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@pytest.fixture
def tls_sim(tmp_path: Path) -> Iterator[tuple[Simulator, Path]]:
    """A simulator serving HTTPS with a certificate from a throwaway CA, and
    that CA's certificate in a file."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with Simulator(tls=context) as simulator:
        yield simulator, ca_file


async def test_https_proxy_tunnels_to_a_provider_trusted_through_ssl_cert_file(
    tls_sim: tuple[Simulator, Path], transport: str
) -> None:
    sim, ca_file = tls_sim
    async with ConnectProxy() as proxy_url:
        env = {"HTTPS_PROXY": proxy_url, "NO_PROXY": "", "SSL_CERT_FILE": str(ca_file)}
        async with served(transport, env) as host:
            agent = await create_llm(host, sim, "anthropic")
            sim.script(Reply.text("tunnelled"))
            assert (await run(host, agent))["output"] == "tunnelled"
    assert sim.requests[0].path == "/v1/messages"


async def test_a_certificate_nobody_trusts_is_refused(
    tls_sim: tuple[Simulator, Path], transport: str
) -> None:
    sim, _ = tls_sim
    async with served(transport) as host:
        agent = await create_llm(host, sim, "anthropic")
        message = failure(await run(host, agent), "connection")
    assert "CERTIFICATE_VERIFY_FAILED" in message
    assert not sim.requests


_TWO_LOOPS = """
import asyncio, sys
from oma_host import Agent
from oma_host.providers.http_settings import HttpSettings, configure_http
from oma_host.testing.simulator import Reply, Simulator

configure_http(HttpSettings(transport=sys.argv[1]))
with Simulator() as sim:
    agent = Agent({"name": "a", "provider": "anthropic", "model": "m",
                   "baseURL": sim.base_url, "apiKey": "k"})
    for answer in ("first", "second"):
        sim.script(Reply.text(answer))
        print(asyncio.run(agent.run("x"))["output"])
"""


async def test_the_python_api_runs_in_one_event_loop_after_another(transport: str) -> None:
    """Each asyncio.run gets its own client, closed when its loop ends."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _TWO_LOOPS,
        transport,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert stdout.decode().split() == ["first", "second"], stderr.decode()
    assert b"Unclosed" not in stderr, stderr.decode()


# -- where the settings live ----------------------------------------------------------

# Prints the modules the host had loaded when it exits.
_REPORT_MODULES = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
    "from oma_host.cli.main import main\n"
    "sys.exit(main())\n"
)


@pytest.mark.parametrize("requests", [0, 1])
async def test_aiohttp_loads_on_the_first_provider_request_of_its_transport(
    sim: Simulator, transport: str, requests: int
) -> None:
    host = await HostClient.spawn([sys.executable, "-c", _REPORT_MODULES])
    await host.initialize({"http": {"transport": transport}})
    agent = await create_llm(host, sim, "anthropic", apiKey=ANTHROPIC_KEY)
    await asyncio.sleep(0.3)  # past the handlers' warm-up
    for _ in range(requests):
        assert (await run(host, agent))["success"] is True
    assert await host.close() == 0
    assert host.process is not None and host.process.stderr is not None
    stderr = (await host.process.stderr.read()).decode()
    report = next(line for line in stderr.splitlines() if line.startswith("MODULES "))
    loaded = "aiohttp" in report.split()[1:]
    assert loaded == (transport == "aiohttp" and requests == 1)


async def test_sessions_of_one_host_share_its_http_settings(tmp_path: Path, transport: str) -> None:
    host = await TcpHost.start(tmp_path)
    try:
        first = await HostClient.connect("127.0.0.1", host.port, token_file=host.token_file)
        await first.initialize({"http": {"transport": transport, "maxConnections": 5}})
        second = await HostClient.connect("127.0.0.1", host.port, token_file=host.token_file)
        with pytest.raises(RpcError) as refused:
            await second.initialize({"http": {"transport": transport, "maxConnections": 6}})
        assert refused.value.code == -32602
        assert "initializationOptions.http" in str(refused.value)
        # The same settings, or none, are welcome.
        await second.initialize({"http": {"transport": transport, "maxConnections": 5}})
        third = await HostClient.connect("127.0.0.1", host.port, token_file=host.token_file)
        await third.initialize()
    finally:
        await host.stop()
