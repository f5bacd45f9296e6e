"""An agent's own secrets never reach the client through a stream split into
pieces, nor through ``agent/history`` (issue 12, item 8)."""

from __future__ import annotations

import json

from oma_host.cli.client import HostClient
from tests.server.helpers import PY, create

KEY = "sk-test-0123456789abcdefghijklmnopqrstuv"
TOKEN = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

# Writes $MY_API_TOKEN to stdout five characters at a time, each piece its own read.
DRIP = (
    "import os, sys, time\n"
    "value = 'token: ' + os.environ['MY_API_TOKEN'] + ' done'\n"
    "for start in range(0, len(value), 5):\n"
    "    sys.stdout.write(value[start:start + 5]); sys.stdout.flush(); time.sleep(0.03)\n"
)


def streamed(host: HostClient, token: str, kind: str = "text") -> str:
    return "".join(event["data"] for event in host.progress(token) if event["type"] == kind)


async def test_a_key_streamed_in_pieces_is_redacted_in_the_joined_progress_text(
    server: HostClient,
) -> None:
    # The test provider echoes the request in 16-character deltas: the key spans three.
    agent = await create(server, name="echo", provider="test", model="echo", apiKey=KEY)
    result = await server.request(
        "agent/stream",
        {"agentId": agent, "input": f"my key is {KEY}", "partialResultToken": "t"},
    )
    text = streamed(server, "t")
    assert KEY not in text and KEY not in json.dumps(server.notifications)
    assert "my key is [redacted]" in text
    assert text == result["output"]  # the stream, joined, is the output


async def test_a_process_agents_env_secret_in_five_character_deltas_is_redacted(
    server: HostClient,
) -> None:
    agent = await create(
        server,
        name="drip",
        backend={
            "kind": "process",
            "command": PY,
            "args": ["-c", DRIP],
            "input": "none",
            "env": {"MY_API_TOKEN": TOKEN},
        },
    )
    result = await server.request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "p"}
    )
    assert len(server.progress("p")) > 1  # it streamed
    text = streamed(server, "p")
    assert TOKEN not in text and TOKEN not in json.dumps(server.notifications)
    assert text == result["output"] == "token: [redacted] done"


async def test_history_is_redacted_of_the_agents_own_secrets_like_the_stored_copy(
    server: HostClient,
) -> None:
    agent = await create(server, name="echo", provider="test", model="echo", apiKey=KEY)
    await server.request("agent/prompt", {"agentId": agent, "input": f"remember {KEY}"})
    history = (await server.request("agent/history", {"agentId": agent}))["messages"]
    assert KEY not in json.dumps(history)
    assert history[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "remember [redacted]"}],
    }
