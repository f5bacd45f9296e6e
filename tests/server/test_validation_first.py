"""Validation happens first: an invalid input is answered before any hook
request, progress notification, process spawn or state change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from tests.builders import image as image_block
from tests.builders import text_message
from tests.server.helpers import create, expect_error, process_config

BAD_INPUTS: list[tuple[Any, str]] = [
    ([], "input"),
    (42, "input"),
    (
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": 1},
                    }
                ],
            }
        ],
        "input[0].content[0].source.data",
    ),
    ([text_message("a"), {"role": "user", "content": "not an array"}], "input[1].content"),
    (
        [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [], "is_error": True}
                ],
            }
        ],
        "input[0].content[0].content",
    ),
]


@pytest.mark.parametrize(("bad", "path"), BAD_INPUTS)
async def test_invalid_input_is_answered_before_hooks_or_progress(
    server: HostClient, bad: Any, path: str
) -> None:
    agent = await create(
        server, name="h", provider="test", model="echo", hooks={"beforeRun": True, "afterRun": True}
    )
    for method, extra in (
        ("agent/run", {"workDoneToken": "w"}),
        ("agent/stream", {"partialResultToken": "p", "workDoneToken": "w"}),
    ):
        error = await expect_error(
            server.request(method, {"agentId": agent, "input": bad, **extra}),
            -32602,
            "InvalidMessageError",
        )
        assert error.data["path"] == path
        assert error.message.startswith(path)
    await expect_error(
        server.request(
            "oma/runAgent",
            {
                "config": {"name": "x", "provider": "test", "model": "echo"},
                "input": bad,
                "progress": True,
            },
        ),
        -32602,
        "InvalidMessageError",
    )
    assert server.server_requests == []
    assert server.notifications == []
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "idle"


async def test_invalid_prompt_blocks_change_nothing(server: HostClient) -> None:
    agent = await create(server, name="e", provider="test", model="echo", hooks={"beforeRun": True})
    server.handlers["agent/beforeRun"] = lambda params: None
    await server.request("agent/prompt", {"agentId": agent, "input": "first"})
    before = await server.request("agent/history", {"agentId": agent})
    calls = len(server.server_requests)
    error = await expect_error(
        server.request(
            "agent/prompt", {"agentId": agent, "input": [image_block(), {"type": "text"}]}
        ),
        -32602,
        "InvalidMessageError",
    )
    assert error.data["path"] == "input[1].text"
    assert await server.request("agent/history", {"agentId": agent}) == before
    assert len(server.server_requests) == calls


async def test_structured_input_to_an_acp_agent_names_it_an_acp_backend(server: HostClient) -> None:
    agent = await create(server, name="coder", backend={"kind": "acp", "command": "never-run"})
    error = await expect_error(
        server.request("agent/run", {"agentId": agent, "input": [text_message("hi")]}),
        -32602,
        "InvalidMessageError",
    )
    assert "agent 'coder' has an ACP backend, which accepts string prompts only" in error.message


async def test_structured_input_never_spawns_an_external_agent(
    server: HostClient, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    agent = await create(server, **process_config("ext", f"touch {marker}; cat"))
    structured = [text_message("hello")]
    for method, params in (
        ("agent/run", {"input": structured}),
        ("agent/stream", {"input": structured, "partialResultToken": "p"}),
        ("agent/prompt", {"input": [{"type": "text", "text": "hello"}]}),
    ):
        error = await expect_error(
            server.request(method, {"agentId": agent, **params}), -32602, "InvalidMessageError"
        )
        assert "accepts string prompts only" in error.message
    error = await expect_error(
        server.request(
            "oma/runAgent",
            {
                "config": process_config("ext", f"touch {marker}; cat"),
                "input": structured,
                "progress": True,
            },
        ),
        -32602,
        "InvalidMessageError",
    )
    assert "accepts string prompts only" in error.message
    assert not marker.exists()
    assert server.notifications == []
    assert (await server.request("agent/history", {"agentId": agent})) == {"messages": []}
    # The same agent with a string does spawn: the marker check can fail.
    result = await server.request("agent/run", {"agentId": agent, "input": "hello"})
    assert result["success"] and marker.exists()
