"""Ctrl-C at a terminal: the whole foreground process group gets SIGINT. Every
``oma-host`` command then exits quietly with status 130 (no traceback), and a
host ends the process trees of the runs it had in flight."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import (
    kill_quietly,
    process_config,
    read_tcp_banner,
    wait_dead,
    wait_for_pid,
)

INTERRUPTED = 130


def _ctrl_c(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a terminal does on Ctrl-C: SIGINT to the foreground process group."""
    os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=30)


def _assert_cancelled(answer: dict[str, Any]) -> None:
    """The interrupted run is answered as a shutdown answers it."""
    assert answer["id"] == 3, answer
    assert answer["error"]["code"] == -32800, answer
    assert answer["error"]["data"]["partial"]["status"]["code"] == "cancelled", answer


@pytest.mark.parametrize("door", ["stdio", "tcp"])
def test_ctrl_c_ends_a_serving_host_quietly_and_its_runs_with_it(tmp_path: Path, door: str) -> None:
    """The runs in flight are ended (their process trees killed) and answered
    -32800 before the host exits 130. Ended in order, not by asyncio.run's
    cancelling of every task: that hung a host whose command was still being
    started when Ctrl-C came (seen under CPU load)."""
    pid_file = tmp_path / "child.pid"
    serve = ["--framing", "ndjson"] if door == "stdio" else ["--tcp", "0"]
    host = subprocess.Popen(
        [sys.executable, "-m", "oma_host", *serve],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "XDG_RUNTIME_DIR": str(tmp_path)},
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    child_pid = None
    connection: socket.socket | None = None
    try:
        initialize: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
        if door == "stdio":
            send, receive = _stdio_channel(host)
            initialize["params"] = {}
        else:
            connection, token = _tcp_connection(host)
            send, receive = _socket_channel(connection)
            initialize["params"] = {"initializationOptions": {"authToken": token}}
        send(initialize)
        assert "result" in receive(), "initialize failed"
        config = process_config("sleeper", f"echo $$ > {pid_file}; exec sleep 60", input="none")
        send({"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": {"config": config}})
        run = {"agentId": receive()["result"]["agentId"], "input": "go"}
        send({"jsonrpc": "2.0", "id": 3, "method": "agent/run", "params": run})
        child_pid = wait_for_pid(pid_file)
        stdout, stderr = _ctrl_c(host)
        assert host.returncode == INTERRUPTED, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
        _assert_cancelled(json.loads(stdout) if door == "stdio" else receive())
        assert wait_dead(child_pid), "the run's process outlived the interrupted host"
    finally:
        if connection is not None:
            connection.close()
        if host.poll() is None:
            host.kill()
        if child_pid is not None:
            kill_quietly(child_pid)


Channel = tuple[Callable[[dict[str, Any]], None], Callable[[], dict[str, Any]]]


def _stdio_channel(host: subprocess.Popen[bytes]) -> Channel:
    assert host.stdin is not None and host.stdout is not None
    stdin, stdout = host.stdin, host.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def receive() -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(stdout.readline())
        return answer

    return send, receive


def _tcp_connection(host: subprocess.Popen[bytes]) -> tuple[socket.socket, str]:
    """Connect to a ``--tcp 0`` host, by the port and token file it prints."""
    assert host.stderr is not None
    port, token_file = read_tcp_banner(host.stderr.readline(), host.stderr.readline())
    token = token_file.read_text().strip()
    return socket.create_connection(("127.0.0.1", port), timeout=30), token


def _socket_channel(connection: socket.socket) -> Channel:
    lines = connection.makefile("rb")

    def send(message: dict[str, Any]) -> None:
        connection.sendall(json.dumps(message).encode() + b"\n")

    def receive() -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(lines.readline())
        return answer

    return send, receive


@pytest.mark.parametrize("command", [["demo"], ["--tcp", "0"]])
def test_ctrl_c_in_a_long_running_command_exits_130_without_a_traceback(
    command: list[str],
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "oma_host", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        # Both print a first line once they are under way (the demo its
        # transcript on stdout, the TCP host its address on stderr).
        stream = process.stderr if command[0] == "--tcp" else process.stdout
        assert stream is not None
        assert stream.readline(), "the command printed nothing"
        _, stderr = _ctrl_c(process)
        assert process.returncode == INTERRUPTED, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
    finally:
        if process.poll() is None:
            process.kill()


def test_ctrl_c_in_call_cancels_the_run_and_prints_its_partial_result() -> None:
    script = "echo partial; exec sleep 60"
    config = {
        "name": "slow",
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script], "input": "none"},
    }
    process = subprocess.Popen(
        [
            *[sys.executable, "-m", "oma_host", "call", "agent/stream"],
            *[json.dumps({"input": "go"}), "--agent", json.dumps(config)],
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    try:
        assert process.stderr is not None
        seen = b""
        while b"partial" not in seen:  # the run has streamed its first output
            line = process.stderr.readline()
            assert line, f"call ended before the run streamed: {seen.decode()}"
            seen += line
        stdout, stderr = _ctrl_c(process)
        assert process.returncode == INTERRUPTED, (seen + stderr).decode()
        partial = json.loads(stdout)
        assert partial["success"] is False and "partial" in partial["output"]
        assert b"Traceback" not in stderr, stderr.decode()
    finally:
        if process.poll() is None:
            process.kill()
