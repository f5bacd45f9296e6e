"""SIGTERM and SIGHUP sent to a serving host (an editor stopping it, a
closed terminal) end it as Ctrl-C does: the runs in flight are ended with
their process trees, the agents' MCP servers are ended, and the host exits
with 128 plus the signal's number, without a traceback. Only the host is
signalled, as a supervisor does: what it started must not outlive it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config
from tests.server.helpers import kill_quietly, process_config, wait_dead, wait_for_pid

FAULTS_SERVER = Path(__file__).resolve().parents[1] / "llm" / "mcp_servers" / "faults.py"
SLEEPER = "echo $$ > {pid_file}; exec sleep 60"


class Host:
    """A host over stdio (ndjson), in a session of its own, driven line by line."""

    def __init__(self, *arguments: str, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "oma_host", *arguments],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        self._ids = iter(range(1, 1000))

    def send(self, method: str, params: Any) -> int:
        assert self.process.stdin is not None
        msg_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        return msg_id

    def answer(self, msg_id: int) -> dict[str, Any]:
        """The answer to ``msg_id``, notifications and others passed over."""
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            assert line, "the host closed its output"
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == msg_id and "method" not in message:
                return message

    def request(self, method: str, params: Any) -> Any:
        answer = self.answer(self.send(method, params))
        assert "result" in answer, answer
        return answer["result"]

    def end_with(self, signum: int) -> tuple[bytes, bytes]:
        os.kill(self.process.pid, signum)
        return self.process.communicate(timeout=60)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_json_rpc_door_ends_its_runs_on_sigterm_and_sighup(tmp_path: Path, signum: int) -> None:
    pid_file = tmp_path / "child.pid"
    host = Host("--framing", "ndjson")
    child_pid = None
    try:
        host.request("initialize", {})
        config = process_config("sleeper", SLEEPER.format(pid_file=pid_file), input="none")
        agent_id = host.request("agent/create", {"config": config})["agentId"]
        run = host.send("agent/run", {"agentId": agent_id, "input": "go"})
        child_pid = wait_for_pid(pid_file)
        stdout, stderr = host.end_with(signum)
        assert host.process.returncode == 128 + signum, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
        (answer,) = [json.loads(line) for line in stdout.splitlines()]
        assert answer["id"] == run and answer["error"]["code"] == -32800, answer
        assert wait_dead(child_pid), "the run's process outlived the host"
    finally:
        host.close()
        if child_pid is not None:
            kill_quietly(child_pid)


def test_the_json_rpc_door_ends_an_agents_mcp_servers_on_sigterm(tmp_path: Path) -> None:
    host = Host("--framing", "ndjson", env={"ANTHROPIC_API_KEY": "sk-ant-termination-test"})
    server_pid = None
    try:
        with Simulator() as sim:
            host.request("initialize", {})
            faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
            config = llm_config(
                sim,
                "anthropic",
                mcpServers=[faults],
                permissions=[{"tool": "*__*", "action": "allow"}],
            )
            agent_id = host.request("agent/create", {"config": config})["agentId"]
            echo = tool_use("e", "faults__echo", text="x")
            sim.script(reply(echo), Reply.text("done"))
            result = host.request("agent/run", {"agentId": agent_id, "input": "go"})
            assert result["success"] is True, result
            (echoed,) = sim.requests[1].body["messages"][-1]["content"]
            server_pid = int(echoed["content"].rsplit("pid ", 1)[1].rstrip(")"))
            # The server stays up for the agent's next run, until the host ends it.
            assert not wait_dead(server_pid, timeout=0.2)
            _, stderr = host.end_with(signal.SIGTERM)
        assert host.process.returncode == 128 + signal.SIGTERM, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
        assert wait_dead(server_pid), "the agent's MCP server outlived the host"
    finally:
        host.close()
        if server_pid is not None:
            kill_quietly(server_pid)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_acp_door_ends_its_turns_on_sigterm_and_sighup(tmp_path: Path, signum: int) -> None:
    pid_file = tmp_path / "child.pid"
    agents = tmp_path / "agents.json"
    config = process_config("sleeper", SLEEPER.format(pid_file=pid_file), input="none")
    agents.write_text(json.dumps([config]))
    host = Host("acp", "--agents", str(agents))
    child_pid = None
    try:
        host.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session = host.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = [{"type": "text", "text": "go"}]
        host.send("session/prompt", {"sessionId": session["sessionId"], "prompt": prompt})
        child_pid = wait_for_pid(pid_file)
        _, stderr = host.end_with(signum)
        assert host.process.returncode == 128 + signum, stderr.decode()
        assert b"Traceback" not in stderr, stderr.decode()
        assert wait_dead(child_pid), "the turn's process outlived the host"
    finally:
        host.close()
        if child_pid is not None:
            kill_quietly(child_pid)


ESCAPER = "setsid sleep 60 & echo $! > {daemon_file}; echo $$ > {pid_file}; exec sleep 60"


@pytest.mark.parametrize("door", ["json-rpc", "acp"])
def test_a_killed_host_leaves_nothing_it_started(tmp_path: Path, door: str) -> None:
    """SIGKILL, which the host cannot handle: its warden ends the run's
    process and a daemon that left the run's process group and session."""
    pid_file, daemon_file = tmp_path / "child.pid", tmp_path / "daemon.pid"
    command = ESCAPER.format(pid_file=pid_file, daemon_file=daemon_file)
    config = process_config("sleeper", command, input="none")
    prompt = [{"type": "text", "text": "go"}]
    if door == "acp":
        agents = tmp_path / "agents.json"
        agents.write_text(json.dumps([config]))
        host = Host("acp", "--agents", str(agents))
    else:
        host = Host("--framing", "ndjson")
    pids: list[int] = []
    try:
        if door == "acp":
            host.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = host.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
            host.send("session/prompt", {"sessionId": session["sessionId"], "prompt": prompt})
        else:
            host.request("initialize", {})
            agent_id = host.request("agent/create", {"config": config})["agentId"]
            host.send("agent/run", {"agentId": agent_id, "input": "go"})
        pids = [wait_for_pid(pid_file), wait_for_pid(daemon_file)]
        host.end_with(signal.SIGKILL)
        assert host.process.returncode == -signal.SIGKILL
        for pid in pids:
            assert wait_dead(pid), f"process {pid} outlived the killed host"
    finally:
        host.close()
        for pid in pids:
            kill_quietly(pid)


def _mcp_server_pid(host: Host, sim: Simulator) -> tuple[str, int]:
    """An LLM agent whose MCP server has answered one call: its id and the server's pid."""
    faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
    config = llm_config(
        sim, "anthropic", mcpServers=[faults], permissions=[{"tool": "*__*", "action": "allow"}]
    )
    agent_id = host.request("agent/create", {"config": config})["agentId"]
    echo = tool_use("e", "faults__echo", text="x")
    sim.script(reply(echo), Reply.text("done"))
    result = host.request("agent/run", {"agentId": agent_id, "input": "go"})
    assert result["success"] is True, result
    (echoed,) = sim.requests[-1].body["messages"][-1]["content"]
    return agent_id, int(echoed["content"].rsplit("pid ", 1)[1].rstrip(")"))


def test_an_mcp_server_outlives_a_process_run_but_not_a_killed_host(tmp_path: Path) -> None:
    """A process agent's run ending does not take an LLM agent's MCP server
    for one of its orphans; SIGKILL of the host ends the server."""
    host = Host("--framing", "ndjson", env={"ANTHROPIC_API_KEY": "sk-ant-termination-test"})
    server_pid = None
    try:
        with Simulator() as sim:
            host.request("initialize", {})
            _, server_pid = _mcp_server_pid(host, sim)
            echo = process_config("echo", "echo done", input="none")
            runner = host.request("agent/create", {"config": echo})["agentId"]
            assert host.request("agent/run", {"agentId": runner, "input": "go"})["success"]
            assert not wait_dead(server_pid, timeout=1), "a process run's end killed the server"
            host.end_with(signal.SIGKILL)
        assert wait_dead(server_pid), "the agent's MCP server outlived the killed host"
    finally:
        host.close()
        if server_pid is not None:
            kill_quietly(server_pid)
