"""``oma-host demo``: spawn a real host over stdio, as an editor would, and
print a readable transcript of what goes over the wire.

It shows a process-backend agent streaming its reply, the structured-input
fast-fail on that agent (and that no process was spawned), and a
prompt/history round trip with text and image blocks on an LLM-backed agent
(the built-in ``test`` provider, which answers with what it received). The
exit code is non-zero if anything did not behave as the protocol says.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from oma_host.client import HostClient, RpcError, host_argv

# A tiny external "agent": reads the prompt on stdin and answers in three
# lines, flushing each, with a pause so the streaming is visible.
_STREAMER = r"""
import sys, time
prompt = sys.stdin.read().strip().splitlines()[-1]
for line in (f"You asked: {prompt}", "Thinking...", "Answer: 42"):
    print(line, flush=True)
    time.sleep(0.3)
"""

# A 1x1 PNG, so the image block is a real image.
_PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="  # noqa: E501


class _Transcript:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.problems: list[str] = []

    def line(self, arrow: str, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.2f}s] {arrow} {text}", flush=True)

    def heading(self, text: str) -> None:
        print(f"\n== {text}", flush=True)

    def expect(self, ok: bool, what: str) -> None:
        self.line("✓" if ok else "✗", what)
        if not ok:
            self.problems.append(what)


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _demo(argv: Sequence[str]) -> int:
    out = _Transcript()
    client = await HostClient.spawn(argv)

    def show_progress(message: dict[str, Any]) -> None:
        value = message["params"]["value"]
        if value.get("type") == "text":
            out.line("←", f"$/progress text {value['data']!r}")

    client.on_notification = show_progress

    out.heading("initialize")
    info = await client.initialize()
    agent_caps = info["capabilities"]["agent"]
    out.line("←", f"{info['serverInfo']['name']} {info['serverInfo']['version']}")
    out.line("←", f"methods: {', '.join(agent_caps['methods'])}")

    out.heading("a process-backend agent streams its reply")
    with tempfile.TemporaryDirectory() as scratch:
        marker = Path(scratch) / "spawned"
        script = f"open({str(marker)!r}, 'a').close()\n" + _STREAMER
        config = {
            "name": "streamer",
            "systemPrompt": "You are a terse assistant.",
            "backend": {"kind": "process", "command": sys.executable, "args": ["-c", script]},
        }
        out.line("→", f"agent/create {_short({'config': {'name': 'streamer', 'backend': '…'}})}")
        agent_id = (await client.request("agent/create", {"config": config}))["agentId"]
        out.line("→", "agent/stream {input: 'What is six times seven?'}")
        result = await client.request(
            "agent/stream",
            {"agentId": agent_id, "input": "What is six times seven?", "partialResultToken": "s1"},
        )
        out.line("←", f"result success={result['success']} output={result['output']!r}")
        out.expect(result["success"] and "Answer: 42" in result["output"], "streamed and completed")
        out.expect(len(client.progress("s1")) >= 2, "text arrived as several $/progress events")

        out.heading("structured input to a process agent fails fast")
        marker.unlink()
        structured = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Describe this"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": _PNG_1X1},
                    },
                ],
            }
        ]
        out.line("→", "agent/run {input: [user: text + image]}")
        try:
            await client.request("agent/run", {"agentId": agent_id, "input": structured})
            out.expect(False, "structured input was rejected")
        except RpcError as error:
            out.line("←", f"error {error.code} {error.data}: {error.message}")
            out.expect(
                error.code == -32602 and "accepts string prompts only" in error.message,
                "rejected with InvalidMessageError",
            )
        out.expect(not marker.exists(), "no process was spawned")

    out.heading("prompt and history with text + image blocks (test provider)")
    llm = {"name": "vision", "provider": "test", "model": "echo", "systemPrompt": "Be brief."}
    llm_id = (await client.request("agent/create", {"config": llm}))["agentId"]
    blocks = structured[0]["content"]
    out.line("→", "agent/prompt {input: [text, image]}")
    reply = await client.request("agent/prompt", {"agentId": llm_id, "input": blocks})
    received = json.loads(reply["output"])
    out.line("←", f"the provider received {_short(received['messages'], 120)}")
    out.expect(received["messages"][-1]["content"] == blocks, "blocks reached the provider intact")
    out.line("→", "agent/prompt {input: 'And now?'}")
    await client.request("agent/prompt", {"agentId": llm_id, "input": "And now?"})
    history = (await client.request("agent/history", {"agentId": llm_id}))["messages"]
    roles = [message["role"] for message in history]
    out.line("←", f"agent/history roles: {roles}")
    out.expect(roles == ["user", "assistant", "user", "assistant"], "two turns in history")

    out.heading("shutdown")
    code = await client.close()
    out.expect(code == 0, f"host exited with code {code}")
    if out.problems:
        print(f"\n{len(out.problems)} problem(s): {'; '.join(out.problems)}", file=sys.stderr)
        return 1
    print("\nall good")
    return 0


def run_demo(host_command: Sequence[str] | None = None) -> int:
    return asyncio.run(_demo(list(host_command) if host_command else host_argv()))
