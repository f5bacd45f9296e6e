"""A client that pipes its requests without waiting for answers (a script's
``printf ... | oma-host``): a request naming the agent that an
``agent/create`` sent before it will make finds that agent, also when the
create restores a stored session and answers after the request arrived."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from tests.server.helpers import expect_error

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


def _piped(state_dir: Path, *requests: tuple[str, Any]) -> dict[int, dict[str, Any]]:
    """Send every request in one write (ndjson, as a pipe does); the answers by id."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}]
    lines += [
        {"jsonrpc": "2.0", "id": index, "method": method, "params": params}
        for index, (method, params) in enumerate(requests, start=2)
    ]
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "--framing", "ndjson", "--state-dir", str(state_dir)],
        input="".join(json.dumps(line) + "\n" for line in lines),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return {answer["id"]: answer for answer in answers if "id" in answer}


def test_a_prompt_piped_after_a_create_with_a_session_finds_its_agent(tmp_path: Path) -> None:
    answers = _piped(
        tmp_path,
        ("agent/create", {"config": ECHO, "sessionId": "piped"}),
        ("agent/prompt", {"agentId": "agent-1", "input": "hello"}),
    )
    assert answers[2]["result"] == {"agentId": "agent-1"}, answers[2]
    assert answers[3]["result"]["success"] is True, answers[3]
    # The turn was stored in the session: a second host restores it.
    again = _piped(
        tmp_path,
        ("agent/create", {"config": ECHO, "sessionId": "piped"}),
        ("agent/history", {"agentId": "agent-1"}),
    )
    history = again[3]["result"]["messages"]
    assert [message["role"] for message in history] == ["user", "assistant"], history
    assert history[0]["content"] == [{"type": "text", "text": "hello"}]


def test_a_request_piped_after_a_create_that_fails_finds_no_agent(tmp_path: Path) -> None:
    broken = {**ECHO, "history": [{"role": "robot", "content": []}]}
    answers = _piped(
        tmp_path,
        ("agent/create", {"config": broken, "sessionId": "broken"}),
        ("agent/history", {"agentId": "agent-1"}),
    )
    assert answers[2]["error"]["data"]["type"] == "InvalidMessageError", answers[2]
    assert answers[3]["error"]["code"] == -32001, answers[3]


async def test_a_failed_create_gives_its_id_to_the_next_one(server: HostClient) -> None:
    broken = {**ECHO, "history": [{"role": "robot", "content": []}]}
    await expect_error(
        server.request("agent/create", {"config": broken, "sessionId": "broken"}),
        -32602,
        "InvalidMessageError",
    )
    assert await server.request("agent/create", {"config": ECHO}) == {"agentId": "agent-1"}
