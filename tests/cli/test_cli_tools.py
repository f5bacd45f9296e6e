"""``oma-host call``, ``--trace`` and ``--state-dir`` from the command line."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

HOST = [sys.executable, "-m", "oma_host"]
ECHO_AGENT = json.dumps({"name": "e", "provider": "test", "model": "echo"})


def call(
    *args: str, stdin: str | None = None, host_options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HOST, *host_options, "call", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_call_prints_the_result_as_json_and_progress_on_stderr() -> None:
    done = call("agent/stream", json.dumps({"input": "hello"}), "--agent", ECHO_AGENT)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["success"] is True
    assert json.loads(result["output"])["messages"][0]["content"][0]["text"] == "hello"
    assert "created agent agent-1" in done.stderr
    assert re.search(r"progress call: text '", done.stderr)


def test_call_reads_params_from_stdin_and_fails_with_the_error_response() -> None:
    params = {"config": {"name": "p", "backend": {"kind": "process", "command": "cat"}}}
    params["input"] = [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
    failed = call("oma/runAgent", "-", stdin=json.dumps(params))
    assert failed.returncode == 2
    error = json.loads(failed.stdout)
    assert error["code"] == -32602 and error["data"]["type"] == "InvalidMessageError"
    assert "accepts string prompts only" in error["message"]
    assert call("agent/list", "{not json").returncode == 2


def test_call_exits_1_for_a_run_that_failed() -> None:
    config = {
        "name": "p",
        "backend": {"kind": "process", "command": "sh", "args": ["-c", "exit 3"]},
    }
    failed = call("oma/runAgent", json.dumps({"config": config, "input": "go"}))
    assert failed.returncode == 1, failed.stderr
    assert json.loads(failed.stdout)["success"] is False


def _call_on_a_terminal(*args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """``oma-host call`` with its stderr on a pseudo-terminal; what that showed."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*HOST, "call", *args],
            stderr=follower,
            stdout=subprocess.PIPE,
            text=True,
            timeout=120,
        )
        os.close(follower)
        follower = -1
        terminal = _read_all(leader)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return done, terminal


def test_call_shows_a_runs_steps_as_a_status_line_when_stderr_is_a_terminal() -> None:
    args = ["agent/run", json.dumps({"input": "hi"}), "--agent", ECHO_AGENT]
    done, terminal = _call_on_a_terminal(*args)
    assert done.returncode == 0, terminal
    assert json.loads(done.stdout)["success"] is True
    assert re.search(r"\r\x1b\[K. waiting for echo \(\d+ s\)", terminal), terminal
    assert "progress call-work" not in terminal
    # Piped stderr (a script): no token is sent, so no status line either.
    piped = call(*args)
    assert "waiting for" not in piped.stderr and "call-work" not in piped.stderr


def test_call_writes_a_streams_text_as_one_text_when_stderr_is_a_terminal() -> None:
    done, terminal = _call_on_a_terminal(
        "agent/stream", json.dumps({"input": "hello"}), "--agent", ECHO_AGENT
    )
    assert done.returncode == 0, terminal
    output = json.loads(done.stdout)["output"]
    assert len(output) > 16  # the echo model streams it in several deltas
    # The deltas joined, as a person reads a reply, and a newline after the last.
    assert output + "\r\n" in terminal, terminal
    assert "progress call: text" not in terminal


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_trace_records_every_frame_with_keys_redacted(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    key = "sk-ant-api03-trace-file-key-123456789"
    config = json.dumps({"name": "e", "provider": "test", "model": "echo", "apiKey": key})
    done = call(
        "agent/run",
        json.dumps({"input": f"the key is {key}"}),
        "--agent",
        config,
        host_options=("--trace", str(trace), "--state-dir", ":memory:"),
    )
    assert done.returncode == 0, done.stderr
    text = trace.read_text()
    assert key not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert [line["direction"] for line in lines[:2]] == ["in", "out"]
    methods = [line["message"].get("method") for line in lines if line["direction"] == "in"]
    assert methods[:3] == ["initialize", "agent/create", "agent/run"]
    assert all(re.match(r"\d{4}-\d\d-\d\dT", line["time"]) for line in lines)
    created = next(line for line in lines if line["message"].get("method") == "agent/create")
    assert created["message"]["params"]["config"]["apiKey"] == "[redacted]"


def test_call_connects_to_a_tcp_host() -> None:
    server = subprocess.Popen([*HOST, "--tcp", "0"], stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        match = re.search(r"listening on ([\d.]+):(\d+)", line)
        assert match, line
        done = call(
            "agent/run",
            json.dumps({"input": "over tcp"}),
            "--agent",
            ECHO_AGENT,
            "--connect",
            f"{match.group(1)}:{match.group(2)}",
        )
        assert done.returncode == 0, done.stderr
        assert "over tcp" in json.loads(done.stdout)["output"]
    finally:
        server.terminate()
        server.wait(timeout=10)


async def test_debug_logs_never_carry_a_key() -> None:
    from oma_host.cli.client import HostClient, host_argv

    key = "sk-ant-api03-debug-log-key-987654321"
    client = await HostClient.spawn(host_argv("--log-level", "DEBUG", "--state-dir", ":memory:"))
    await client.initialize()
    config = {
        "name": "e",
        "provider": "anthropic",
        "model": "m",
        "apiKey": key,
        "baseURL": "http://127.0.0.1:9",
    }
    agent = (await client.request("agent/create", {"config": config}))["agentId"]
    result = await client.request("agent/run", {"agentId": agent, "input": f"my key: {key}"})
    assert result["success"] is False  # nothing listens on port 9
    assert await client.close() == 0
    stderr = await client.stderr_text()
    assert "agent/create" in stderr  # the bodies were logged...
    assert key not in stderr  # ...without the key
