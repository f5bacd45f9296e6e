"""ACP agents through the real host when things go wrong: structured input,
faults at every stage, cancellation, timeouts, and the end of the process
(docs/protocol.md, "External backends",
"Cancellation and progress")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from tests.builders import image as image_block
from tests.builders import text_message
from tests.interop.helpers import AcpConfig, spawned_pids, whoami
from tests.server.helpers import (
    create,
    expect_error,
    kill_quietly,
    peak_rss_bytes,
    wait_for_progress,
)
from tests.server.helpers import wait_dead_async as wait_dead


async def run(host: HostClient, agent: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await host.request("agent/run", {"agentId": agent, "input": text})
    return result


def assert_failed(result: dict[str, Any], kind: str, *parts: str) -> str:
    assert result["success"] is False and result["status"]["code"] == "error", result
    assert result["errorInfo"]["kind"] == kind, result
    message: str = result["status"]["message"]
    assert result["output"] == message
    for part in parts:
        assert part in message, message
    return message


async def test_structured_input_never_spawns_the_agent(
    host: HostClient, acp: AcpConfig, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    config = acp("strict", env={"ACP_AGENT_MARKER": str(marker)})
    agent = await create(host, **config)
    structured = [text_message("hi")]
    for method, params in [
        ("agent/run", {"agentId": agent, "input": structured}),
        ("agent/stream", {"agentId": agent, "input": structured, "partialResultToken": "s"}),
        (
            "agent/prompt",
            {"agentId": agent, "input": [{"type": "text", "text": "hi"}, image_block()]},
        ),
        ("oma/runAgent", {"config": config, "input": structured, "progress": True}),
    ]:
        error = await expect_error(host.request(method, params), -32602, "InvalidMessageError")
        assert "accepts string prompts only" in error.message
    await asyncio.sleep(0.3)  # time enough for a spawned agent to write its marker
    assert not marker.exists()
    assert host.progress("s") == [] and host.notifications == []
    assert (await host.request("agent/history", {"agentId": agent})) == {"messages": []}
    # The marker does get written once a string arrives: the check above can fail.
    assert (await run(host, agent, "hi"))["success"] is True
    assert len(await spawned_pids(marker)) == 1


async def test_a_missing_command_fails_the_run_and_the_host_serves_on(host: HostClient) -> None:
    config = {"name": "ghost", "backend": {"kind": "acp", "command": "/nonexistent/acp-agent"}}
    agent = await create(host, **config)
    result = await run(host, agent, "hello")
    assert_failed(result, "spawn", "could not start the ACP agent", "No such file")
    assert (await host.request("agent/list", {}))["agents"][0]["backend"] == "acp"


async def test_an_agent_exiting_during_initialize_is_named(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"ACP_AGENT_EXIT_ON_INITIALIZE": "1"}))
    result = await run(host, agent, "hello")
    assert_failed(
        result, "process", "exited with code 2 during initialize", "agent exiting during initialize"
    )


async def test_a_refused_session_reports_the_agents_own_error(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"ACP_AGENT_REFUSE_SESSION": "1"}))
    result = await run(host, agent, "hello")
    assert_failed(
        result, "auth", "refused session/new", "authentication required", "log in first", "Token"
    )


async def test_a_crash_mid_turn_fails_it_and_the_next_run_starts_afresh(
    host: HostClient, acp: AcpConfig, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    agent = await create(host, **acp(env={"ACP_AGENT_MARKER": str(marker)}, systemPrompt="ROLE"))
    assert (await run(host, agent, "hello"))["output"] == "you said: ROLE\n\nhello"
    crashed = await run(host, agent, "[crash]")
    assert_failed(
        crashed, "process", "exited with code 3 during session/prompt", "agent crashing on purpose"
    )
    # A new process and session, so the role prompt goes first again.
    assert (await run(host, agent, "after"))["output"] == "you said: ROLE\n\nafter"
    first, second = await spawned_pids(marker)
    assert first != second and await wait_dead(first)
    assert (await host.request("agent/state", {"agentId": agent}))["status"] == "completed"


async def test_garbage_on_stdout_is_a_protocol_fault(host: HostClient, acp: AcpConfig) -> None:
    agent = await create(host, **acp())
    before = whoami((await run(host, agent, "[whoami]"))["output"])
    result = await run(host, agent, "[garbage]")
    assert_failed(result, "protocol", "not JSON-RPC on stdout", "this is not json")
    assert await wait_dead(int(before["pid"]))
    after = whoami((await run(host, agent, "[whoami]"))["output"])
    assert after["pid"] != before["pid"] and after["turn"] == "1"


async def test_cancel_sends_session_cancel_and_answers_with_the_partial_output(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    before = whoami((await run(host, agent, "[whoami]"))["output"])
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "[hang]", "partialResultToken": "c"}
    )
    await wait_for_progress(host, "c")
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 15)
    error = response["error"]
    assert error["code"] == -32800 and error["data"]["type"] == "RequestCancelled"
    partial = error["data"]["partial"]
    assert partial["status"]["code"] == "cancelled" and partial["aborted"] is True
    assert partial["output"] == "working..."
    # The agent got session/cancel and ended its turn, so the session lives on.
    next_run = await host.request(
        "agent/stream", {"agentId": agent, "input": "[whoami]", "partialResultToken": "n"}
    )
    after = whoami(next_run["output"])
    assert after["pid"] == before["pid"] and after["turn"] == "3"
    # What it said after the cancel is shown with the next run, not as its output.
    late = host.progress("n")[0]
    assert late["type"] == "acp_update" and late["data"]["kind"] == "agent_message_chunk"
    assert late["data"]["content"]["text"] == "late words"


async def test_timeout_bounds_an_agent_that_never_answers(host: HostClient, acp: AcpConfig) -> None:
    # Long enough for the agent's "working..." to arrive first even on a loaded
    # machine (500 ms was not, under CI with other work on both cores).
    agent = await create(host, **acp(timeoutMs=3000))
    before = whoami((await run(host, agent, "[whoami]"))["output"])
    result = await run(host, agent, "[deaf]")
    assert result["success"] is False and result["status"]["code"] == "timeout"
    assert result["aborted"] is True and result["output"] == "working..."
    # It ignores session/cancel: the host ends it after a grace period, and the
    # next run starts a new process and session.
    assert await wait_dead(int(before["pid"]))
    after = whoami((await run(host, agent, "[whoami]"))["output"])
    assert after["pid"] != before["pid"] and after["turn"] == "1"


async def test_dispose_ends_the_agent_and_its_process_group(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    pid = int(whoami((await run(host, agent, "[whoami]"))["output"])["pid"])
    child = int((await run(host, agent, "[child]"))["output"].removeprefix("child="))
    try:
        assert await host.request("agent/dispose", {"agentId": agent}) is None
        assert await wait_dead(pid) and await wait_dead(child)
    finally:
        kill_quietly(pid)
        kill_quietly(child)


async def test_host_shutdown_ends_the_agent(acp: AcpConfig) -> None:
    host = await HostClient.spawn()
    await host.initialize()
    agent = await create(host, **acp())
    pid = int(whoami((await run(host, agent, "[whoami]"))["output"])["pid"])
    try:
        assert await host.close() == 0
        assert await wait_dead(pid)
    finally:
        kill_quietly(pid)


async def test_run_agent_is_one_off_and_ends_its_process(host: HostClient, acp: AcpConfig) -> None:
    result = await host.request(
        "oma/runAgent", {"config": acp("once"), "input": "[whoami]", "progress": True}
    )
    me = whoami(result["output"])
    assert me["turn"] == "1" and await wait_dead(int(me["pid"]))
    kinds = [n["params"]["type"] for n in host.notifications if n["method"] == "oma/progress"]
    assert kinds == ["agent_start", "agent_complete"]


async def test_output_past_max_output_bytes_fails_the_run_and_ends_the_agent(
    host: HostClient, acp: AcpConfig
) -> None:
    """1 MiB of stdout a run: 512 KiB of text is a reply, 4 MiB fails with
    output_limit and ends the agent; the next run starts a fresh one."""
    config = acp("flood")
    config["backend"]["maxOutputBytes"] = 1024 * 1024
    agent = await create(host, **config)
    first = whoami((await run(host, agent, "[whoami]"))["output"])
    within = await run(host, agent, "[flood:8]")
    assert within["success"] is True and len(within["output"]) == 8 * 65536
    over = await run(host, agent, "[flood:64]")
    assert over["success"] is False and over["errorInfo"]["kind"] == "output_limit", over
    message = over["status"]["message"]
    assert "wrote more than 1048576 bytes on stdout during session/prompt" in message
    assert "(backend.maxOutputBytes); it was ended" in message
    assert await wait_dead(int(first["pid"]))
    after = whoami((await run(host, agent, "[whoami]"))["output"])
    assert after["pid"] != first["pid"]


async def test_an_acp_agents_160_mib_keeps_the_host_near_the_cap(acp: AcpConfig) -> None:
    host = await HostClient.spawn()
    await host.initialize()
    assert host.process is not None
    try:
        agent = await create(host, **acp("flood"))
        result = await host.request(
            "agent/run", {"agentId": agent, "input": "[flood:2560]"}, timeout=120
        )
        peak = peak_rss_bytes(host.process.pid) / 2**20
    finally:
        await host.close()
    assert result["errorInfo"]["kind"] == "output_limit", result
    print(f"host peak RSS, an ACP agent writing 160 MiB (16 MiB cap): {peak:.0f} MB")
    assert peak < 300
