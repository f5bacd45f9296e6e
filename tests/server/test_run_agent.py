"""oma/runAgent: a one-off agent with runId, progress and work-done progress."""

from __future__ import annotations

from oma_host.cli.client import HostClient
from tests.builders import image as image_block
from tests.builders import text_message

CONFIG = {"name": "one-off", "provider": "test", "model": "echo"}


async def test_string_run_reports_prompt_progress_and_completion(server: HostClient) -> None:
    result = await server.request(
        "oma/runAgent", {"config": CONFIG, "input": "hello", "progress": True, "runId": "fixed-id"}
    )
    assert result["success"] is True
    assert result["identity"]["runId"] == "fixed-id"
    events = [n["params"] for n in server.notifications if n["method"] == "oma/progress"]
    assert [e["type"] for e in events] == ["agent_start", "agent_complete"]
    assert events[0] == {
        "runId": "fixed-id",
        "type": "agent_start",
        "agent": "one-off",
        "data": {"prompt": "hello"},
    }
    assert events[1]["data"] == result


async def test_structured_run_reports_the_messages(server: HostClient) -> None:
    messages = [
        text_message("q"),
        text_message("a", "assistant"),
        {"role": "user", "content": [image_block()]},
    ]
    result = await server.request(
        "oma/runAgent", {"config": CONFIG, "input": messages, "progress": True}
    )
    start = next(
        n["params"] for n in server.notifications if n["params"].get("type") == "agent_start"
    )
    assert start["data"] == {"messages": messages}
    assert start["runId"] == result["identity"]["runId"]


async def test_without_progress_flag_no_progress_is_sent(server: HostClient) -> None:
    result = await server.request("oma/runAgent", {"config": CONFIG, "input": "x"})
    assert result["success"] and server.notifications == []


async def test_run_agent_of_a_process_agent(server: HostClient) -> None:
    config = {"name": "p", "backend": {"kind": "process", "command": "cat"}}
    result = await server.request(
        "oma/runAgent", {"config": config, "input": "ping", "progress": True}
    )
    assert result["output"] == "ping"
