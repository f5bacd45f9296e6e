"""``oma-host demo``: a real host spawned over stdio, and a readable transcript of the wire.

A process agent streaming, the structured-input fast-fail, and a prompt and
history round trip on an LLM agent against the provider simulator (or the real
provider with ``--live``). A non-zero exit means something did not behave as
the protocol says.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient, RpcError, host_argv
from oma_host.core.errors import ErrorCode
from oma_host.core.provider_facts import TEST_PROVIDER_VARIABLE, default_providers, facts_of
from oma_host.testing.simulator import Simulator

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


async def _llm_section(
    client: HostClient, out: _Transcript, blocks: list[dict[str, Any]], live: LiveProvider | None
) -> None:
    """An LLM-backed agent on a text + image turn, then a second turn: against
    the provider simulator, or a real provider with ``--live``."""
    with contextlib.ExitStack() as stack:
        if live is None:
            simulator = stack.enter_context(Simulator())
            out.heading(
                f"an LLM agent with text + image, against the simulator at {simulator.base_url}"
            )
            config: dict[str, Any] = {
                "name": "vision",
                "provider": "anthropic",
                "model": "simulated-model",
                "baseURL": simulator.base_url,
                "apiKey": "demo-key-not-secret",
            }
        else:
            out.heading(f"an LLM agent with text + image, live on {live.provider} ({live.model})")
            config = {"name": "vision", "provider": live.provider, "model": live.model}
        config["systemPrompt"] = "Answer in one short sentence."
        agent_id = (await client.request("agent/create", {"config": config}))["agentId"]
        out.line("→", "agent/prompt {input: [text 'Describe this', image/png]}")
        reply = await client.request("agent/prompt", {"agentId": agent_id, "input": blocks})
        out.line("←", f"success={reply['success']} output={reply['output']!r}")
        out.expect(reply["success"], "the provider answered the text + image turn")
        if live is None:
            sent = simulator.requests[-1].body["messages"][-1]["content"]
            out.line("←", f"the provider received {_short(sent, 120)}")
            # Prompt caching (on by default for Anthropic) marks the last block
            # with cache_control: a wire addition, not a change to the input.
            unmarked = [
                {key: value for key, value in block.items() if key != "cache_control"}
                for block in sent
            ]
            out.expect(unmarked == blocks, "text and image reached the provider intact")
        out.line("→", "agent/prompt {input: 'And what colour is it?'}")
        second = await client.request(
            "agent/prompt", {"agentId": agent_id, "input": "And what colour is it?"}
        )
        out.line("←", f"success={second['success']} output={second['output']!r}")
        history = (await client.request("agent/history", {"agentId": agent_id}))["messages"]
        roles = [message["role"] for message in history]
        out.line("←", f"agent/history roles: {roles}")
        out.expect(roles == ["user", "assistant", "user", "assistant"], "two turns in history")


async def _demo(argv: Sequence[str], live: LiveProvider | None) -> int:
    # The host offers the in-process test provider too, as a host for a demo should.
    client = await HostClient.spawn(argv, env={TEST_PROVIDER_VARIABLE: "1"})
    try:
        return await _transcript(client, live)
    except asyncio.CancelledError:
        # Ctrl-C: the host had it too. It is waited for here, so that it is
        # not reaped after the event loop has closed (a warning and a
        # traceback on stderr, where the user expects a quiet exit).
        await client.reap()
        raise


async def _transcript(client: HostClient, live: LiveProvider | None) -> int:
    out = _Transcript()

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
    out.line("←", f"providers: {', '.join(agent_caps['providers'])}")

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
        structured: list[dict[str, Any]] = [
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
                error.code == ErrorCode.INVALID_PARAMS
                and "accepts string prompts only" in error.message,
                "rejected with InvalidMessageError",
            )
        out.expect(not marker.exists(), "no process was spawned")

    await _llm_section(client, out, structured[0]["content"], live)

    out.heading("shutdown")
    code = await client.close()
    out.expect(code == 0, f"host exited with code {code}")
    if out.problems:
        print(f"\n{len(out.problems)} problem(s): {'; '.join(out.problems)}", file=sys.stderr)
        return 1
    print("\nall good")
    return 0


@dataclass(frozen=True)
class LiveProvider:
    provider: str
    model: str


def live_provider(provider: str | None, model: str | None) -> LiveProvider:
    """The real provider ``--live`` uses: the one named, else the first of
    :func:`~oma_host.core.provider_facts.default_providers` whose key is set,
    on its default model unless ``model`` is given."""
    candidates = [facts_of(provider)] if provider else default_providers()
    for facts in candidates:
        if facts.key_is_set() and (model or facts.default_model):
            return LiveProvider(facts.name, model or facts.default_model or "")
    wanted = " or ".join(name for facts in candidates for name in facts.key_variables)
    raise SystemExit(f"oma-host demo --live: set {wanted} first")


def run_demo(
    host_command: Sequence[str] | None = None,
    *,
    live: bool = False,
    provider: str | None = None,
    model: str | None = None,
) -> int:
    chosen = live_provider(provider, model) if live else None
    return asyncio.run(_demo(list(host_command) if host_command else host_argv(), chosen))
