"""Ctrl-C at a terminal: the whole foreground process group gets SIGINT. Every
``oma-host`` command then exits quietly with status 130 (no traceback), and a
host ends the process trees of the runs it had in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

INTERRUPTED = 130


def _ctrl_c(process: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """What a terminal does on Ctrl-C: SIGINT to the foreground process group."""
    os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=30)


def _send(process: subprocess.Popen[bytes], message: dict[str, Any]) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()
    answer: dict[str, Any] = json.loads(process.stdout.readline())
    return answer


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_ends_a_serving_host_quietly_and_its_runs_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    host = subprocess.Popen(
        [sys.executable, "-m", "oma_host", "--framing", "ndjson"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own group, as a terminal's foreground job
    )
    child_pid = None
    try:
        _send(host, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        script = f"echo $$ > {pid_file}; exec sleep 60"
        config = {
            "name": "sleeper",
            "backend": {
                "kind": "process",
                "command": "sh",
                "args": ["-c", script],
                "input": "none",
            },
        }
        created = _send(
            host,
            {"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": {"config": config}},
        )
        assert host.stdin is not None
        run = {"agentId": created["result"]["agentId"], "input": "go"}
        host.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 3, "method": "agent/run", "params": run}).encode()
            + b"\n"
        )
        host.stdin.flush()
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text().strip():
            assert time.monotonic() < deadline, "the process agent never started"
            time.sleep(0.02)
        child_pid = int(pid_file.read_text())
        _, stderr = _ctrl_c(host)
        assert host.returncode == INTERRUPTED, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
        deadline = time.monotonic() + 10
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child_pid), "the run's process outlived the interrupted host"
    finally:
        if host.poll() is None:
            host.kill()
        if child_pid is not None and _alive(child_pid):
            os.kill(child_pid, signal.SIGKILL)


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
