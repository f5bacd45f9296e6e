"""Lifecycle over stdio: initialize, the gate before it, shutdown/exit codes,
end of input ending every child the host started, and a cold start that
answers initialize without loading the heavy modules."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from oma_host.cli.client import HostClient
from oma_host.wire.framing import encode_frame
from tests.server.helpers import create, expect_error, process_config, wait_dead, wait_for_file

ALL_METHODS = {
    "initialize",
    "shutdown",
    "agent/create",
    "agent/run",
    "agent/stream",
    "agent/prompt",
    "agent/history",
    "agent/state",
    "agent/reset",
    "agent/dispose",
    "agent/list",
    "oma/runAgent",
}


async def test_initialize_reports_agent_capabilities_and_server_info() -> None:
    client = await HostClient.spawn()
    result = await client.initialize()
    agent = result["capabilities"]["agent"]
    assert set(agent["methods"]) >= ALL_METHODS
    assert agent["structuredInput"] is True
    assert "process" in agent["backends"]
    assert "test" in agent["providers"]
    assert result["serverInfo"]["name"] == "oma-host"
    assert isinstance(result["serverInfo"]["version"], str)
    assert await client.close() == 0


async def test_requests_before_initialize_are_refused_with_server_not_initialized() -> None:
    client = await HostClient.spawn()
    error = await expect_error(client.request("agent/list", {}), -32002, "ServerNotInitialized")
    assert "initialize" in error.message
    # A notification before initialize is dropped without an answer, and the host keeps serving.
    client.notify("agent/whatever", {})
    await client.initialize()
    assert await client.request("agent/list", {}) == {"agents": []}
    assert await client.close() == 0


async def test_second_initialize_is_an_invalid_request(server: HostClient) -> None:
    await expect_error(server.initialize(), -32600, "InvalidRequest")


async def test_shutdown_returns_null_then_refuses_requests_and_exit_code_is_zero() -> None:
    client = await HostClient.spawn()
    await client.initialize()
    _, response = client.start_request("shutdown")
    message = await asyncio.wait_for(response, 10)
    assert "result" in message and message["result"] is None
    await expect_error(client.request("agent/list", {}), -32600, "InvalidRequest")
    client.notify("exit")
    assert await client.wait() == 0


async def test_exit_without_shutdown_exits_with_code_one() -> None:
    client = await HostClient.spawn()
    await client.initialize()
    client.notify("exit")
    assert await client.wait() == 1


async def test_end_of_stdin_kills_running_children_and_exits_zero(tmp_path: Path) -> None:
    client = await HostClient.spawn()
    await client.initialize()
    pidfile = tmp_path / "pid"
    agent = await create(
        client, **process_config("sleeper", f"echo $$ > {pidfile}; sleep 60", input="none")
    )
    _, pending = client.start_request("agent/run", {"agentId": agent, "input": "go"})
    pid = int(await wait_for_file(pidfile))
    assert client.process.stdin is not None
    client.process.stdin.close()
    assert await client.wait() == 0
    assert wait_dead(pid), "the child outlived the host"
    pending.cancel()


async def test_shutdown_kills_running_children(tmp_path: Path) -> None:
    client = await HostClient.spawn()
    await client.initialize()
    pidfile = tmp_path / "pid"
    agent = await create(
        client, **process_config("sleeper", f"sleep 60 & echo $! > {pidfile}; wait", input="none")
    )
    _, pending = client.start_request("agent/run", {"agentId": agent, "input": "go"})
    grandchild = int(await wait_for_file(pidfile))
    assert await client.request("shutdown") is None
    assert wait_dead(grandchild), "the grandchild outlived shutdown"
    # The interrupted run is answered, not left hanging.
    response = await asyncio.wait_for(pending, 10)
    assert "error" in response or response["result"]["success"] is False
    client.notify("exit")
    assert await client.wait() == 0


# The host's own modules that answering initialize may load: the light half
# of the method registry and the core's dependency-free leaves.
LIGHT_CORE = {
    "oma_host.core",
    "oma_host.core.abort",
    "oma_host.core.errors",
    "oma_host.core.redact",
    "oma_host.core.version",
    "oma_host.core.suggest",
    "oma_host.core.provider_facts",
    "oma_host.core.model_facts",  # the providers' model tables: plain data
    "oma_host.core.provider_table",  # the parser's: the providers' facts as generated JSON
    "oma_host.core.credentials",  # login's keys: nothing read until a key is looked up
    "oma_host.core.cli_options",
    "oma_host.core.places",
    "oma_host.core.quickjson",
    "oma_host.process",
    "oma_host.process.subreaper",
    "oma_host.process.collector",
    "oma_host.process.termination",
    "oma_host.wire",
    "oma_host.wire.ids",
    "oma_host.wire.peer",
    "oma_host.wire.framing",
    "oma_host.wire.stdio",
    "oma_host.wire.limits",
}
_REPORT_MODULES = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
    "from oma_host.cli.main import main\n"
    "sys.exit(main())\n"
)


async def _reported(
    script: str, args: list[str], stdin: bytes, prefix: str
) -> tuple[bytes, list[str]]:
    """Run the host through ``script`` (which reports on stderr in a line
    starting with ``prefix``) with ``args``, given ``stdin``; its stdout and
    the report's words."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(stdin), 30)
    lines = stderr.decode().splitlines()
    report = next((line for line in lines if line.startswith(prefix)), None)
    assert report is not None, (stdout, stderr)
    return stdout, report.split()[1:]


async def test_answering_initialize_loads_neither_pydantic_nor_the_agent_core() -> None:
    """Cold start: a plain initialize, then exit at once (before the warm-up
    that follows the answer), and the host reports what it had imported."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    stdin = encode_frame(json.dumps(init).encode())
    stdin += encode_frame(json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode())
    stdout, report = await _reported(_REPORT_MODULES, [], stdin, "MODULES ")
    assert b'"serverInfo"' in stdout
    modules = set(report)
    assert "oma_host.server.lifecycle" in modules  # initialize was answered from there
    assert not {name for name in modules if name.split(".")[0] in ("pydantic", "pydantic_core")}
    core = {name for name in modules if name.startswith("oma_host.core")}
    assert core <= LIGHT_CORE, core - LIGHT_CORE
    heavy = {"oma_host.server.models", "oma_host.server.agent_methods", "oma_host.orchestration"}
    heavy |= {"oma_host.cli.runs", "oma_host.cli.viewer_server", "aiohttp.web"}  # runs serve's
    assert not heavy & modules


# At exit: the thresholds, the frozen objects, and the highest young
# threshold the host set while it served.
_REPORT_COLLECTOR = (
    "import atexit, gc, sys\n"
    "young = [0]\n"
    "set_threshold = gc.set_threshold\n"
    "def spy(*thresholds):\n"
    "    young.append(thresholds[0])\n"
    "    set_threshold(*thresholds)\n"
    "gc.set_threshold = spy\n"
    "atexit.register(lambda: print('GC', *gc.get_threshold(), gc.get_freeze_count(),"
    " max(young), file=sys.stderr))\n"
    "from oma_host.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


_ACP_LIST = b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'


async def test_a_serving_host_runs_with_the_collector_tuned_for_many_runs() -> None:
    """Both doors serve with what startup built frozen and the thresholds of
    oma_host.process.collector (CPython's 700, 10, 10 cost a third of the
    host's CPU with 1,000 runs in flight): the busy one while a request is
    in flight, the idle one once none is."""
    from oma_host.process import collector

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    acp_init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    doors = (
        (
            [],
            encode_frame(json.dumps(init).encode())
            + encode_frame(b'{"jsonrpc":"2.0","method":"exit"}'),
        ),
        # The ACP door answers a plain initialize before it serves: a second
        # request is the one in flight.
        (["acp"], json.dumps(acp_init).encode() + b"\n" + _ACP_LIST),
    )
    for args, stdin in doors:
        stdout, report = await _reported(_REPORT_COLLECTOR, args, stdin, "GC ")
        assert b'"result"' in stdout, (args, stdout)
        young, middle, old, frozen, busy_young = map(int, report)
        expected = (collector.YOUNG_THRESHOLD, collector.MIDDLE_THRESHOLD, collector.OLD_THRESHOLD)
        assert (young, middle, old) == expected, args
        assert busy_young == collector.BUSY_YOUNG_THRESHOLD, args  # while a request ran
        assert frozen > 10_000, args  # the modules startup imported
