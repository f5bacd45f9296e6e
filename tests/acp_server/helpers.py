"""Drives ``oma-host acp`` with the scripted TypeScript SDK client and with acpx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Simulator

TIMEOUT_S = 90
ACP_AGENT_DIR = Path(__file__).resolve().parent.parent / "interop" / "acp_agent"
ACP_AGENT_SCRIPT = ACP_AGENT_DIR / "agent.mjs"
# A 1x1 PNG.
IMAGE = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
    "hgGAWjR9awAAAABJRU5ErkJggg=="
)


def refused_agents_file(path: Path) -> tuple[dict[str, Any], str]:
    """``oma-host acp --agents PATH`` asked for a session, when the file is
    refused: the error ``session/new`` is answered with, and what the door
    wrote on stderr (it answers ``initialize`` and goes on serving)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "oma_host", "acp", "--agents", str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    for number, request in enumerate((initialize(), new_session(path.parent)), 1):
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, **request}) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0
    error: dict[str, Any] = answer["error"]
    return error, stderr


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image(data: str = IMAGE, mime_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data, "mimeType": mime_type}


def step(method: str, **params: Any) -> dict[str, Any]:
    return {"method": method, "params": params}


def initialize(**capabilities: Any) -> dict[str, Any]:
    return step("initialize", protocolVersion=1, clientCapabilities=capabilities)


def new_session(cwd: Path, mcp_servers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return step("session/new", cwd=str(cwd), mcpServers=mcp_servers or [])


def prompt(*blocks: dict[str, Any], session: str = "$session") -> dict[str, Any]:
    return step("session/prompt", sessionId=session, prompt=list(blocks))


def reply_text(updates: list[dict[str, Any]]) -> str:
    return "".join(
        update["content"]["text"]
        for update in updates
        if update.get("sessionUpdate") == "agent_message_chunk"
        and update["content"]["type"] == "text"
    )


def acp_agent(name: str = "inner", **backend: Any) -> dict[str, Any]:
    """A config wrapping the TypeScript SDK's scripted ACP agent
    (``tests/interop/acp_agent``)."""
    return {
        "name": name,
        "backend": {"kind": "acp", "command": "node", "args": [str(ACP_AGENT_SCRIPT)], **backend},
    }


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [update.get("sessionUpdate", "permission") for update in updates]


class Door:
    """One test's agents file, state directory and clients."""

    def __init__(self, client_dir: Path, sim: Simulator, tmp_path: Path) -> None:
        self.client_dir = client_dir
        self.sim = sim
        self.tmp = tmp_path
        self.cwd = tmp_path / "project"
        self.cwd.mkdir()
        self.state = tmp_path / "state"
        self.agents_file = tmp_path / "agents.json"
        self.env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-key"}
        self.flags: list[str] = []  # more options for oma-host acp
        self.use_agents_file = True  # False: no --agents (the user's file, else the default)
        self.write_agents()

    def llm(self, name: str = "claude", **fields: Any) -> dict[str, Any]:
        """An LLM agent of the simulator. Its ``models`` are its model alone
        unless given, so the door asks the provider for no model list (and
        the simulator's requests are the turns'); ``models=None`` leaves
        them out, and the door lists the provider's."""
        config = {
            "name": name,
            "provider": "anthropic",
            "model": "model-one",
            "baseURL": self.sim.base_url,
            **fields,
        }
        config.setdefault("models", [config["model"]])
        return {key: value for key, value in config.items() if value is not None}

    def write_agents(self, *extra: dict[str, Any], first: dict[str, Any] | None = None) -> None:
        agents = [first or self.llm(), *extra]
        self.agents_file.write_text(json.dumps(agents))

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "oma_host",
            "acp",
            *(["--agents", str(self.agents_file)] if self.use_agents_file else []),
            "--state-dir",
            str(self.state),
            *self.flags,
        ]

    def run(
        self,
        *steps: dict[str, Any],
        permission: str | None = None,
        permission_option_id: str | None = None,
        files: dict[str, str] | None = None,
        refuse_writes: bool | dict[str, Any] = False,
    ) -> list[dict[str, Any]]:
        """Run ``steps`` in one ``oma-host acp`` through the SDK client; each
        step's ``{method, result | error, updates}``. The client answers a
        permission request with ``permission_option_id``, else the option of
        kind ``permission``, else cancelled; ``fs/read_text_file`` with
        ``files[path]`` (the editor's buffers); ``fs/write_text_file`` by
        keeping the text as the buffer, or with an error if ``refuse_writes``
        (-32603; a dict: the error's ``data``)."""
        script = self.tmp / "script.json"
        script.write_text(
            json.dumps(
                {
                    "steps": list(steps),
                    "permission": permission,
                    "permissionOptionId": permission_option_id,
                    "files": files or {},
                    "refuseWrites": refuse_writes,
                }
            )
        )
        done = subprocess.run(
            ["node", str(self.client_dir / "client.mjs"), str(script), "--", *self.argv()],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        output = json.loads(done.stdout)
        assert output["exitCode"] == 0, output["stderr"]
        steps_done: list[dict[str, Any]] = output["steps"]
        # Every session/update of the run, arrived during a step or between two.
        self.notifications: list[dict[str, Any]] = output["notifications"]
        # Every terminal/* request the client served, in order: {method, params}.
        self.terminal_requests: list[dict[str, Any]] = output["terminalRequests"]
        return steps_done

    def acpx(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run acpx with ``oma-host acp`` as its custom agent, in the project."""
        command = " ".join(self.argv())
        home = self.tmp / "home"  # acpx keeps its sessions under ~/.acpx
        home.mkdir(exist_ok=True)
        return subprocess.run(
            [
                "node",
                str(self.client_dir / "node_modules" / "acpx" / "dist" / "cli.js"),
                "--cwd",
                str(self.cwd),
                "--agent",
                command,
                *args,
            ],
            capture_output=True,
            text=True,
            env={**self.env, "HOME": str(home)},
            timeout=TIMEOUT_S,
            check=False,
        )

    def user_content(self, request: int = -1) -> list[dict[str, Any]]:
        """The latest user message's content in a request the simulator got,
        without the adapter's prompt-caching marks (``cache_control``): what
        these tests check is the blocks the door made."""
        messages = self.sim.requests[request].body["messages"]
        return [
            {key: value for key, value in block.items() if key != "cache_control"}
            for block in messages[-1]["content"]
        ]
