"""MCP servers' tools, through a real ``oma-host`` whose model is the provider
simulator: the reference servers from npm (``server-everything``,
``server-filesystem``, installed from tests/llm/mcp_servers by npm ci) and a
fault server written with the ``mcp`` SDK (tests/llm/mcp_servers/faults.py).
The tools are allowed by a permission rule (MCP tools ask by default)."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.llm.mcp_servers import offered_name
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.npm_packages import ensure_npm_packages
from tests.providers.helpers import llm_config, results_sent
from tests.server.helpers import HostFactory, pid_alive

SERVERS = Path(__file__).resolve().parent / "mcp_servers"
BIN = SERVERS / "node_modules" / ".bin"
FAULTS = [sys.executable, str(SERVERS / "faults.py")]
ALLOW_MCP = [{"tool": "*__*", "action": "allow"}]
KEY = "sk-ant-api03-mcp-test-key-DO-NOT-LEAK-424242"


@pytest.fixture(scope="module", autouse=True)
def npm_servers() -> None:
    ensure_npm_packages(SERVERS, "@modelcontextprotocol/server-filesystem")


@pytest.fixture
async def host(spawn_host: HostFactory) -> HostClient:
    return await spawn_host(env={"ANTHROPIC_API_KEY": KEY})


def stdio(name: str, command: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "command": command[0], "args": command[1:], **extra}


async def create(host: HostClient, sim: Simulator, **extra: Any) -> str:
    config = llm_config(sim, "anthropic", permissions=ALLOW_MCP, **extra)
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


def offered(sim: Simulator, index: int = 0) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in sim.requests[index].body.get("tools", [])}


async def wait_dead(pid: int) -> None:
    for _ in range(400):
        if not pid_alive(pid):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} is still alive")


async def test_everything_tools_are_offered_called_and_answered(
    host: HostClient, sim: Simulator
) -> None:
    everything = stdio("everything", [str(BIN / "mcp-server-everything"), "stdio"])
    agent = await create(host, sim, mcpServers=[everything])
    sim.script(
        reply(
            tool_use("e", "everything__echo", message="hello from the model"),
            tool_use("i", "everything__get-tiny-image"),
            tool_use("s", "everything__get-sum", a=2, b=40),
        ),
        Reply.text("done"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=120)
    assert result["success"] is True, result
    tools = offered(sim)
    assert {"everything__echo", "everything__get-tiny-image", "everything__get-sum"} <= set(tools)
    echo_schema = tools["everything__echo"]["input_schema"]
    assert echo_schema["properties"]["message"]["type"] == "string"
    assert echo_schema["required"] == ["message"]
    echo, image, total = results_sent(sim)
    assert echo["tool_use_id"] == "e" and "hello from the model" in echo["content"]
    assert "is_error" not in echo
    parts = image["content"]
    kinds = [part["type"] for part in parts]
    assert "image" in kinds, parts
    picture = parts[kinds.index("image")]
    assert picture["source"]["type"] == "base64"
    assert picture["source"]["media_type"] == "image/png"
    assert len(picture["source"]["data"]) > 100
    assert "42" in total["content"]
    calls = {call["toolName"]: call for call in result["toolCalls"]}
    assert "hello from the model" in calls["everything__echo"]["output"]


async def test_embedded_resources_are_kept_in_the_result(host: HostClient, sim: Simulator) -> None:
    everything = stdio("everything", [str(BIN / "mcp-server-everything"), "stdio"])
    agent = await create(host, sim, mcpServers=[everything])
    reference = "everything__get-resource-reference"
    sim.script(
        reply(
            tool_use("t", reference, resourceType="Text", resourceId=1),
            tool_use("b", reference, resourceType="Blob", resourceId=2),
        ),
        Reply.text("done"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=120)
    assert result["success"] is True, result
    text, blob = results_sent(sim)
    assert "is_error" not in text and "is_error" not in blob
    # A text resource is text, headed by its URI.
    assert "[resource demo://resource/dynamic/text/1]\nResource 1:" in text["content"]
    # A binary one is a file part of its own (a document on Anthropic's wire),
    # named by the last component of its URI, its data as the server sent it.
    parts = blob["content"]
    assert [part["type"] for part in parts] == ["text", "document", "text"], parts
    document = parts[1]
    assert document["title"] == "2"
    assert document["source"]["type"] == "base64"
    assert document["source"]["media_type"] == "text/plain"
    assert base64.b64decode(document["source"]["data"]).startswith(b"Resource 2:")


async def test_filesystem_server_reads_the_agents_folder_and_servers_are_reused(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("the secret of the notes\n")
    filesystem = stdio("fs", [str(BIN / "mcp-server-filesystem"), str(tmp_path)])
    faults = stdio("faults", FAULTS)
    agent = await create(host, sim, mcpServers=[filesystem, faults], cwd=str(tmp_path))
    sim.script(
        reply(
            tool_use("r", "fs__read_text_file", path=str(tmp_path / "notes.txt")),
            tool_use("p", "faults__echo", text="one"),
        ),
        Reply.text("first"),
        reply(tool_use("p", "faults__echo", text="two")),
        Reply.text("second"),
    )
    first = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=120)
    assert first["success"] is True, first
    read, echo_one = results_sent(sim)
    assert read["content"].strip() == "the secret of the notes"
    second = await host.request("agent/run", {"agentId": agent, "input": "again"}, timeout=60)
    assert second["success"] is True, second
    (echo_two,) = results_sent(sim, 3)
    # The same server process answered both runs.
    pid_one = echo_one["content"].rsplit("pid ", 1)[1].rstrip(")")
    pid_two = echo_two["content"].rsplit("pid ", 1)[1].rstrip(")")
    assert pid_one == pid_two
    assert pid_alive(int(pid_one))
    # Dispose ends it.
    await host.request("agent/dispose", {"agentId": agent})
    await wait_dead(int(pid_one))


async def test_reset_ends_the_servers_and_the_next_run_starts_them_again(
    host: HostClient, sim: Simulator
) -> None:
    agent = await create(host, sim, mcpServers=[stdio("faults", FAULTS)])
    sim.script(
        reply(tool_use("p", "faults__echo", text="one")),
        Reply.text("first"),
        reply(tool_use("p", "faults__echo", text="two")),
        Reply.text("second"),
    )
    await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    pid_one = int(results_sent(sim)[0]["content"].rsplit("pid ", 1)[1].rstrip(")"))
    await host.request("agent/reset", {"agentId": agent})
    await wait_dead(pid_one)
    await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    pid_two = int(results_sent(sim, 3)[0]["content"].rsplit("pid ", 1)[1].rstrip(")"))
    assert pid_two != pid_one and pid_alive(pid_two)


async def test_a_one_off_run_ends_its_servers(host: HostClient, sim: Simulator) -> None:
    sim.script(reply(tool_use("p", "faults__echo", text="one")), Reply.text("done"))
    config = llm_config(
        sim, "anthropic", permissions=ALLOW_MCP, mcpServers=[stdio("faults", FAULTS)]
    )
    result = await host.request("oma/runAgent", {"config": config, "input": "go"}, timeout=60)
    assert result["success"] is True, result
    pid = int(results_sent(sim)[0]["content"].rsplit("pid ", 1)[1].rstrip(")"))
    await wait_dead(pid)


async def test_a_tool_error_goes_back_to_the_model(host: HostClient, sim: Simulator) -> None:
    agent = await create(host, sim, mcpServers=[stdio("faults", FAULTS)])
    sim.script(
        reply(tool_use("f", "faults__fail", reason="bad"), tool_use("m", "faults__missing")),
        Reply.text("noted"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert result["success"] is True, result
    failed, missing = results_sent(sim)
    assert failed["is_error"] is True and "fail" in failed["content"]
    # Not a tool of any server: the loop says which tools there are.
    assert missing["is_error"] is True
    assert "faults__echo" in missing["content"]


async def test_a_server_that_crashes_at_start_fails_the_run_with_its_stderr(
    host: HostClient, sim: Simulator
) -> None:
    token = "faults-token-DO-NOT-LEAK-31337"
    crashing = stdio(
        "broken",
        [*FAULTS, "crash-at-start"],
        env=[{"name": "FAULTS_API_TOKEN", "value": token}],
    )
    agent = await create(host, sim, mcpServers=[crashing])
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "mcp"
    message = result["errorInfo"]["message"]
    assert "MCP server 'broken' failed to start" in message
    assert "faults: cannot start, bad configuration" in message
    assert token not in message and "[redacted]" in message
    assert sim.requests == []  # the model was never asked


async def test_a_server_that_dies_mid_call_fails_the_run(host: HostClient, sim: Simulator) -> None:
    agent = await create(host, sim, mcpServers=[stdio("faults", FAULTS)])
    sim.script(reply(tool_use("d", "faults__die")), Reply.text("never"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "mcp"
    message = result["errorInfo"]["message"]
    assert "MCP server 'faults' exited during a call of 'die'" in message
    assert "faults: dying in the middle of a call" in message
    # The next run finds it gone too.
    again = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert again["errorInfo"]["kind"] == "mcp"
    assert "'faults'" in again["errorInfo"]["message"]


async def test_a_command_that_does_not_exist_is_named(host: HostClient, sim: Simulator) -> None:
    agent = await create(host, sim, mcpServers=[stdio("nothere", ["/nonexistent/mcp-server"])])
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert result["errorInfo"]["kind"] == "mcp"
    assert "MCP server 'nothere' failed to start" in result["errorInfo"]["message"]
    assert "/nonexistent/mcp-server" in result["errorInfo"]["message"]


async def test_server_names_must_be_unique(host: HostClient, sim: Simulator) -> None:
    from oma_host.cli.client import RpcError

    twice = [stdio("same", FAULTS), stdio("same", FAULTS)]
    with pytest.raises(RpcError) as raised:
        await create(host, sim, mcpServers=twice)
    assert "config.mcpServers[1].name: 'same' is used by another server" in raised.value.message


def test_offered_names_stay_unique_and_within_the_providers_limit() -> None:
    assert offered_name("fs", "read_file", set()) == "fs__read_file"
    assert offered_name("my server", "do.it", set()) == "my_server__do_it"
    long = offered_name("s" * 40, "t" * 40, set())
    assert len(long) == 64 and long.startswith("s" * 40 + "__")
    taken = {"a_b__c"}
    other = offered_name("a b", "c", taken)
    assert other != "a_b__c" and len(other) <= 64
    assert all(ch.isalnum() or ch in "_-" for ch in long + other)


def test_an_agent_without_servers_never_imports_the_sdk(sim: Simulator) -> None:
    """The SDK is heavy: only an agent with mcpServers may load it."""
    import subprocess

    code = (
        "import asyncio, sys\n"
        "from oma_host.core.agent import Agent\n"
        f"config = {llm_config(sim, 'anthropic', tools=['file_read', 'file_edit'])!r}\n"
        "result = asyncio.run(Agent(config).run('hi'))\n"
        "print(result['success'], sorted(m for m in sys.modules if m.split('.')[0] == 'mcp'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "ANTHROPIC_API_KEY": KEY},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "True []", done.stderr


async def test_a_streamable_http_server_is_reached_by_url(host: HostClient, sim: Simulator) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = await asyncio.create_subprocess_exec(
        *FAULTS, "http", str(port), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        for _ in range(200):
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.05)
        web = {
            "type": "http",
            "name": "web",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer web-token-DO-NOT-LEAK"}],
        }
        agent = await create(host, sim, mcpServers=[web])
        sim.script(reply(tool_use("h", "web__echo", text="over http")), Reply.text("done"))
        result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
        assert result["success"] is True, result
        (echo,) = results_sent(sim)
        assert echo["content"] == f"echo: over http (pid {server.pid})"
        listed = await host.request("agent/list")
        shown = next(a for a in listed["agents"] if a["agentId"] == agent)
        assert "web-token" not in str(shown)
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 10)


async def test_shutdown_ends_the_servers(sim: Simulator) -> None:
    client = await HostClient.spawn(env={"ANTHROPIC_API_KEY": KEY})
    await client.initialize()
    agent = await create(client, sim, mcpServers=[stdio("faults", FAULTS)])
    sim.script(reply(tool_use("p", "faults__echo", text="one")), Reply.text("done"))
    await client.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    pid = int(results_sent(sim)[0]["content"].rsplit("pid ", 1)[1].rstrip(")"))
    assert pid_alive(pid)
    assert await client.close() == 0
    await wait_dead(pid)


async def test_an_mcp_tool_asks_by_default(host: HostClient, sim: Simulator) -> None:
    seen: list[Any] = []

    def answer(params: Any) -> Any:
        seen.append(params)
        return {"approve": True}

    host.handlers["agent/requestPermission"] = answer
    config = llm_config(sim, "anthropic", mcpServers=[stdio("faults", FAULTS)])
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    sim.script(reply(tool_use("p", "faults__echo", text="asked")), Reply.text("done"))
    await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    (request,) = seen
    assert request["source"] == "tool" and request["kind"] is None
    assert request["tool"] == {"name": "faults__echo", "input": {"text": "asked"}, "toolUseId": "p"}
    assert "echo: asked" in results_sent(sim)[0]["content"]


async def test_a_call_that_never_answers_is_an_error_after_tool_timeout_ms(
    host: HostClient, sim: Simulator
) -> None:
    """A tool that hangs, and one whose server writes a line that is not
    JSON and never answers: each is an error result after toolTimeoutMs, and
    the server answers the next call of the same session."""
    agent = await create(host, sim, mcpServers=[stdio("faults", FAULTS)], toolTimeoutMs=1000)
    sim.script(
        reply(tool_use("h", "faults__hang"), tool_use("g", "faults__garble")),
        reply(tool_use("e", "faults__echo", text="still here")),
        Reply.text("done"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=60)
    assert result["success"] is True, result
    hung, garbled = results_sent(sim, 1)
    for late, name in ((hung, "faults__hang"), (garbled, "faults__garble")):
        assert late["is_error"] is True
        assert late["content"] == f"{name}: the call did not finish within 1 s (toolTimeoutMs)"
    (echoed,) = results_sent(sim, 2)
    assert "echo: still here" in echoed["content"]


async def test_an_answer_over_the_limit_is_dropped_and_the_call_told_so(
    host: HostClient, sim: Simulator
) -> None:
    """An MCP answer over 16 MiB is not kept: the call is an error result
    naming the limit, at once (not after toolTimeoutMs), and the server
    answers the next call."""
    agent = await create(host, sim, mcpServers=[stdio("faults", FAULTS)])
    sim.script(
        reply(tool_use("b", "faults__big", size=17 * 1024 * 1024)),
        reply(tool_use("s", "faults__big", size=10)),
        Reply.text("done"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=90)
    assert result["success"] is True, result
    (dropped,) = results_sent(sim, 1)
    assert dropped["is_error"] is True
    assert "over the 16777216 bytes the host takes from one" in dropped["content"]
    (small,) = results_sent(sim, 2)
    assert small["content"] == "x" * 10
