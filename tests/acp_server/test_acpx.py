"""``oma-host acp`` as acpx's custom agent: acpx (a headless ACP client
nobody here wrote) starts it, opens a session and prints the reply."""

from __future__ import annotations

import json

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door


def test_acpx_exec_prints_the_reply(door: Door) -> None:
    door.sim.script(Reply.text("Hello, acpx", chunk_size=3))
    done = door.acpx("--format", "quiet", "exec", "say hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello, acpx"
    assert door.user_content() == [{"type": "text", "text": "say hello"}]


def test_acpx_json_output_shows_the_streamed_updates_and_stop_reason(door: Door) -> None:
    door.sim.script(Reply.text("streamed", chunk_size=2))
    done = door.acpx("--format", "json", "exec", "stream please")
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "streamed" and len(chunks) == 4
    answers = [m["result"] for m in messages if "stopReason" in m.get("result", {})]
    assert answers == [{"stopReason": "end_turn", "usage": answers[0]["usage"]}]
