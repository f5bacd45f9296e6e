"""``--trace`` and the state directory: nothing the tracer meets ends the
host, keys never reach the trace (not even in the frame that brings them),
and the files the host writes are the user's alone."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from tests.server.helpers import expect_error, nested_object

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


async def _traced(trace: Path, *flags: str, env: dict[str, str] | None = None) -> HostClient:
    client = await HostClient.spawn(host_argv("--trace", str(trace), *flags), env=env)
    await client.initialize()
    return client


def _lines(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


async def test_a_lone_surrogate_is_traced_and_the_host_keeps_serving(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    client = await _traced(trace)
    _, pending = client.start_request("agent/list", {}, msg_id="id-\ud800")
    assert (await asyncio.wait_for(pending, 15))["result"] == {"agents": []}
    agent = await client.request("agent/create", {"config": ECHO})
    await expect_error(
        client.request("agent/run", {"agentId": agent["agentId"], "input": "a\udc00"}),
        -32602,
        "InvalidParams",
    )
    assert await client.request("agent/list", {}) != {}
    assert await client.close() == 0
    ids = [line["message"].get("id") for line in _lines(trace)]
    assert "id-\ud800" in ids  # written as its JSON escape, read back the same


async def test_a_frame_nested_too_deep_to_trace_is_logged_and_answered(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    client = await _traced(trace)
    deep = nested_object()
    result = await client.request("oma/runAgent", {"config": ECHO, "input": "x", "metadata": deep})
    assert result["success"] is True
    assert await client.close() == 0
    assert any("could not be traced" in line.get("error", "") for line in _lines(trace))


async def test_the_frame_that_brings_a_key_is_traced_without_it(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    own, named, standard = "own-key-Qx81pz", "named-key-Lm27vw", "standard-key-Hn53kd"
    client = await _traced(
        trace, env={"OMA_TEST_NAMED": named, "OPENAI_API_KEY": standard, "ANTHROPIC_API_KEY": ""}
    )
    runs = [
        ({**ECHO, "apiKey": own}, own),
        ({**ECHO, "apiKeyEnv": "OMA_TEST_NAMED"}, named),
        (ECHO, standard),
    ]
    for config, key in runs:  # each frame brings its own key, in its input too
        result = await client.request("oma/runAgent", {"config": config, "input": f"key: {key}"})
        assert result["success"] is True
    assert await client.close() == 0
    text = trace.read_text()
    assert own not in text and named not in text and standard not in text
    assert text.count('"input": "key: [redacted]"') == 3


async def test_trace_and_state_files_are_the_users_alone(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    state = tmp_path / "new" / "state"
    umask = os.umask(0o022)  # a login shell's: files are 0644 unless made otherwise
    try:
        client = await _traced(trace, "--state-dir", str(state))
    finally:
        os.umask(umask)
    result = await client.request("oma/runAgent", {"config": ECHO, "input": "x"})
    assert result["success"] is True
    await client.request("agent/create", {"config": ECHO, "sessionId": "s1"})
    assert await client.close() == 0
    assert stat.S_IMODE(trace.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    files = list(state.iterdir())
    assert files
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.skipif(os.getuid() != 0, reason="making a file of another user needs root")
def test_trace_refuses_a_file_of_another_user(tmp_path: Path) -> None:
    trace = tmp_path / "planted.jsonl"
    trace.write_text("")
    trace.chmod(0o666)
    os.chown(trace, 65534, 65534)
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--trace", str(trace)],
        input=b"",
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert b"belongs to another user" in done.stderr and b"Traceback" not in done.stderr
    assert trace.read_text() == ""


async def test_mcp_server_secrets_and_a_key_typed_in_a_prompt_stay_out_of_trace_and_log(
    tmp_path: Path,
) -> None:
    """MCP servers' secret variables and every header, and an agent's own key
    (of no credential shape) typed into its input, reach neither the --trace
    file nor the DEBUG log; a variable of no secret name is kept."""
    trace = tmp_path / "trace.jsonl"
    own, password, header, cookie = "Zq81own0Key9Lm27", "db-pw-Tr47xq", "hdr-Vb82nm", "ck-Pw19ds"
    client = await _traced(trace, "--log-level", "DEBUG")
    config = {
        **ECHO,
        "apiKey": own,
        "mcpServers": [
            {
                "name": "db",
                "command": "true",
                "env": [
                    {"name": "DB_PASSWORD", "value": password},
                    {"name": "REGION", "value": "kept-region-value"},
                ],
            },
            {
                "type": "http",
                "name": "api",
                "url": "http://127.0.0.1:9/mcp",
                "headers": [
                    {"name": "X-Api-Key", "value": header},
                    {"name": "Cookie", "value": cookie},
                ],
            },
        ],
    }
    agent = await client.request("agent/create", {"config": config})
    await client.request("agent/run", {"agentId": agent["agentId"], "input": f"my key {own}"})
    assert await client.close() == 0
    log = await client.stderr_text()
    assert "received" in log  # the DEBUG log shows the traffic
    for text in (trace.read_text(), log):
        for secret in (own, password, header, cookie):
            assert secret not in text
    assert "kept-region-value" in trace.read_text()
