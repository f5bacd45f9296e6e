"""agent/create … agent/list over the wire, with the in-process ``test``
provider (model ``echo`` answers with the JSON of what it received)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from oma_host.cli.client import HostClient
from tests.builders import image as image_block
from tests.builders import text_message
from tests.server.helpers import (
    InProcessHost,
    create,
    expect_error,
    process_config,
    received,
    wait_for_file,
)

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


async def test_run_and_stream_are_fresh_and_pass_structured_input_unchanged(
    server: HostClient,
) -> None:
    agent = await create(server, **ECHO)
    conversation = [
        text_message("look"),
        text_message("ok", role="assistant"),
        {"role": "user", "content": [{"type": "text", "text": "now this"}, image_block()]},
    ]
    result = await server.request("agent/run", {"agentId": agent, "input": conversation})
    assert result["success"] is True
    assert received(result) == conversation
    assert result["status"] == {"code": "ok"}
    assert result["identity"]["runId"]
    streamed = await server.request(
        "agent/stream", {"agentId": agent, "input": "hi", "partialResultToken": "p"}
    )
    assert received(streamed) == [text_message("hi")]
    assert (await server.request("agent/history", {"agentId": agent})) == {"messages": []}


async def test_stream_sends_every_event_as_progress_before_the_response(server: HostClient) -> None:
    agent = await create(server, **ECHO)
    _, pending = server.start_request(
        "agent/stream",
        {"agentId": agent, "input": "stream me", "partialResultToken": "tok", "runId": "r-1"},
    )
    response = await asyncio.wait_for(pending, 30)
    result = response["result"]
    events = server.progress("tok")
    assert len(events) > 1 and all(event["type"] == "text" for event in events)
    assert "".join(event["data"] for event in events) == result["output"]
    assert result["identity"]["runId"] == "r-1"
    # Every progress notification arrived before the response.
    position = server.received.index(response)
    progress_positions = [
        i for i, m in enumerate(server.received) if m.get("method") == "$/progress"
    ]
    assert max(progress_positions) < position


async def test_failed_stream_sends_an_error_event_and_a_failed_result(server: HostClient) -> None:
    agent = await create(server, name="f", provider="test", model="fail")
    result = await server.request(
        "agent/stream", {"agentId": agent, "input": "x", "partialResultToken": 9}
    )
    assert result["success"] is False and result["status"]["code"] == "error"
    assert "400" in result["status"]["message"]
    assert [event["type"] for event in server.progress(9)] == ["error"]
    assert server.progress(9)[0]["data"]["kind"] == "provider"


async def test_prompt_appends_one_user_turn_and_the_reply(server: HostClient) -> None:
    agent = await create(server, **ECHO)
    first = await server.request("agent/prompt", {"agentId": agent, "input": "hello"})
    blocks = [{"type": "text", "text": "and this"}, image_block()]
    second = await server.request("agent/prompt", {"agentId": agent, "input": blocks})
    history = (await server.request("agent/history", {"agentId": agent}))["messages"]
    assert history == [
        text_message("hello"),
        first["messages"][0],
        {"role": "user", "content": blocks},
        second["messages"][0],
    ]
    # The second turn was sent with the first as context.
    assert received(second) == history[:3]
    state = await server.request("agent/state", {"agentId": agent})
    assert state["status"] == "completed"
    assert state["tokenUsage"]["input_tokens"] > 0


async def test_prompt_with_a_partial_result_token_streams_the_turn(server: HostClient) -> None:
    agent = await create(server, **ECHO)
    _, pending = server.start_request(
        "agent/prompt", {"agentId": agent, "input": "stream me", "partialResultToken": "pt"}
    )
    response = await asyncio.wait_for(pending, 30)
    result = response["result"]
    events = server.progress("pt")
    assert len(events) > 1 and all(event["type"] == "text" for event in events)
    assert "".join(event["data"] for event in events) == result["output"]
    position = server.received.index(response)
    progress_positions = [
        i for i, m in enumerate(server.received) if m.get("method") == "$/progress"
    ]
    assert max(progress_positions) < position
    # Still a prompt: the turn and its reply are in the history.
    history = (await server.request("agent/history", {"agentId": agent}))["messages"]
    assert history == [text_message("stream me"), result["messages"][0]]
    # Without a token nothing is streamed.
    await server.request("agent/prompt", {"agentId": agent, "input": "quiet"})
    assert len(server.progress("pt")) == len(events)


async def test_failed_prompt_leaves_history_unchanged(server: HostClient) -> None:
    agent = await create(server, name="f", provider="test", model="fail")
    result = await server.request("agent/prompt", {"agentId": agent, "input": "x"})
    assert result["success"] is False
    assert (await server.request("agent/history", {"agentId": agent})) == {"messages": []}
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "error"


async def test_concurrent_prompts_run_in_arrival_order(server: HostClient) -> None:
    agent = await create(server, name="slow", provider="test", model="slow-echo")
    pending = [
        server.start_request("agent/prompt", {"agentId": agent, "input": f"turn {n}"})[1]
        for n in range(3)
    ]
    responses = await asyncio.wait_for(asyncio.gather(*pending), 60)
    assert all(r["result"]["success"] for r in responses)
    history = (await server.request("agent/history", {"agentId": agent}))["messages"]
    users = [m["content"][0]["text"] for m in history if m["role"] == "user"]
    assert users == ["turn 0", "turn 1", "turn 2"]
    # Each turn saw exactly the turns before it.
    assert [len(received(r["result"])) for r in responses] == [1, 3, 5]


async def test_config_history_restores_turns_for_prompt(server: HostClient) -> None:
    restored = [text_message("earlier"), text_message("reply", role="assistant")]
    agent = await create(server, **ECHO, history=restored)
    assert (await server.request("agent/history", {"agentId": agent}))["messages"] == restored
    result = await server.request("agent/prompt", {"agentId": agent, "input": "next"})
    assert received(result) == [*restored, text_message("next")]
    run = await server.request("agent/run", {"agentId": agent, "input": "fresh"})
    assert received(run) == [text_message("fresh")]


async def test_invalid_config_history_is_invalid_message_error_with_path(
    server: HostClient,
) -> None:
    error = await expect_error(
        server.request(
            "agent/create",
            {"config": {**ECHO, "history": [text_message("ok"), {"role": "robot", "content": []}]}},
        ),
        -32602,
        "InvalidMessageError",
    )
    assert error.data["path"] == "config.history[1].role"


async def test_reset_list_and_dispose(server: HostClient) -> None:
    agent = await create(server, **ECHO)
    worker = await create(server, name="w", backend={"kind": "process", "command": "cat"})
    listing = (await server.request("agent/list", {}))["agents"]
    assert {"agentId": agent, "name": "echo"} in listing
    assert {"agentId": worker, "name": "w", "backend": "process"} in listing
    await server.request("agent/prompt", {"agentId": agent, "input": "x"})
    assert await server.request("agent/reset", {"agentId": agent}) is None
    assert (await server.request("agent/history", {"agentId": agent})) == {"messages": []}
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "idle"
    assert await server.request("agent/dispose", {"agentId": worker}) is None
    remaining = (await server.request("agent/list", {}))["agents"]
    assert [entry["agentId"] for entry in remaining] == [agent]


async def test_a_cancelled_run_leaves_the_agent_idle(server: HostClient, tmp_path: Path) -> None:
    started = tmp_path / "started"
    agent = await create(
        server, **process_config("slow", f"echo go > {started}; exec sleep 60", input="none")
    )
    msg_id, pending = server.start_request("agent/run", {"agentId": agent, "input": "x"})
    await wait_for_file(started)
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "running"
    server.cancel(msg_id)
    answer = await asyncio.wait_for(pending, 30)
    assert answer["error"]["code"] == -32800
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "idle"


async def test_defaults_from_initialization_options_fill_the_model() -> None:
    client = await InProcessHost.serve()
    await client.initialize({"defaults": {"provider": "test", "model": "echo"}})
    agent = await create(client, name="d")
    result = await client.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is True
    assert await client.close() == 0


async def test_work_done_progress_begins_and_ends(server: HostClient) -> None:
    agent = await create(server, **ECHO)
    await server.request("agent/run", {"agentId": agent, "input": "x", "workDoneToken": "w"})
    values = server.progress("w")
    assert values[0] == {"kind": "begin", "title": "echo"}
    assert values[-1] == {"kind": "end", "message": "ok"}
    assert {value["kind"] for value in values[1:-1]} == {"report"}  # "waiting for echo (0 s)"
