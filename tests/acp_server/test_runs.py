"""The ACP door records each prompt turn as a run with its spans, as the
JSON-RPC door records its runs: ``oma-host acp`` driven by the TypeScript
SDK's client, then read back with ``oma-host runs``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Fault, Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, text
from tests.builders import reply, tool_use


def oma_runs(state: Path, *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", "runs", "--state-dir", str(state), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_prompt_turns_are_runs_with_their_tool_calls_failures_and_cancellations(
    door: Door,
) -> None:
    door.write_agents(first=door.llm(tools=["file_read"]))
    (door.cwd / "notes.txt").write_text("forty-two")
    call = tool_use("call_1", "file_read", path="notes.txt")
    door.sim.script(
        reply(call),
        Reply.text("It says forty-two."),
        Fault(401, "invalid x-api-key"),
        Reply.text("a long answer " * 20, chunk_size=4, event_delay_s=0.05),
    )
    cancelled = prompt(text("tell me a story"))
    cancelled["cancelAfterChunks"] = 2
    _, new, read, _failed, stopped = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("read the notes")),
        prompt(text("again")),
        cancelled,
    )
    assert read["result"]["stopReason"] == "end_turn"
    assert stopped["result"]["stopReason"] == "cancelled"
    session_id = new["result"]["sessionId"]
    rows = oma_runs(door.state, "list")
    assert [(row["agent"], row["method"], row["status"]) for row in reversed(rows)] == [
        ("claude", "session/prompt", "ok"),
        ("claude", "session/prompt", "error"),
        ("claude", "session/prompt", "cancelled"),
    ]
    assert {row["sessionId"] for row in rows} == {session_id}
    first, second, _third = reversed(rows)
    assert first["turns"] == 2 and second["errorKind"] == "auth"
    shown = oma_runs(door.state, "show", first["runId"])
    root = shown["spans"][0]
    assert root["name"] == "invoke_agent claude"
    assert root["attributes"]["gen_ai.conversation.id"] == session_id
    assert [child["name"] for child in root["children"]] == [
        "chat model-one",
        "execute_tool file_read",
        "chat model-one",
    ]
    tool = root["children"][1]
    assert tool["stored"] == {"toolInput": {"path": "notes.txt"}}
    assert tool["attributes"]["oma.permission.decision"] == "allow"
