"""The ``update_plan`` tool: an LLM agent's plan streamed whole each time it
changes, as ACP ``plan`` updates through the official TypeScript SDK's
client, and as ``plan`` stream events on the JSON-RPC door; it runs unasked
in every mode, read-only included."""

from __future__ import annotations

from typing import Any, get_args

from acp.schema import PlanEntryPriority, PlanEntryStatus

from oma_host.cli.client import HostClient, host_argv
from oma_host.core.events import PlanPriority, PlanStatus
from oma_host.testing.simulator import Reply, Simulator
from tests.acp_server.helpers import Door, initialize, new_session, prompt, step, text
from tests.builders import reply, tool_use

FIRST = [
    {"content": "Read the failing test", "priority": "high", "status": "in_progress"},
    {"content": "Fix the parser", "priority": "medium", "status": "pending"},
]
SECOND = [
    {"content": "Read the failing test", "priority": "high", "status": "completed"},
    {"content": "Fix the parser", "priority": "medium", "status": "in_progress"},
]


def _plan_calls() -> list[Reply]:
    return [
        reply(_use("p1", FIRST)),
        reply(_use("p2", SECOND)),
        Reply.text("on it"),
    ]


def _use(call_id: str, entries: list[dict[str, str]]) -> dict[str, Any]:
    return tool_use(call_id, "update_plan", entries=entries)


def test_plan_updates_reach_the_editor_in_order(door: Door) -> None:
    door.write_agents(first=door.llm(tools=["update_plan"]))
    door.sim.script(*_plan_calls())
    _, _, _, turn = door.run(
        initialize(),
        new_session(door.cwd),
        step("session/set_mode", sessionId="$session", modeId="read-only"),
        prompt(text("fix the parser")),
    )
    assert turn["result"]["stopReason"] == "end_turn"
    updates = turn["updates"]
    assert not [u for u in updates if "permissionRequest" in u]
    plans = [u["entries"] for u in updates if u.get("sessionUpdate") == "plan"]
    assert plans == [FIRST, SECOND]
    calls = [u for u in updates if u.get("sessionUpdate") == "tool_call"]
    assert [call["kind"] for call in calls] == ["think", "think"]
    results = [
        block
        for request in door.sim.requests
        for message in request.body["messages"]
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    assert results[-1]["content"] == "plan updated: 2 steps, 1 completed"


async def test_plan_events_stream_on_the_json_rpc_door(sim: Simulator) -> None:
    sim.script(*_plan_calls())
    client = await HostClient.spawn(host_argv(), env={"ANTHROPIC_API_KEY": "sk-ant-plan"})
    await client.initialize()
    config = {
        "name": "planner",
        "provider": "anthropic",
        "model": "m",
        "baseURL": sim.base_url,
        "tools": ["update_plan"],
    }
    agent = (await client.request("agent/create", {"config": config}))["agentId"]
    result = await client.request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "t"}
    )
    assert await client.close() == 0
    assert result["success"], result
    plans = [event["data"] for event in client.progress("t") if event["type"] == "plan"]
    assert plans == [{"entries": FIRST}, {"entries": SECOND}]


def test_a_malformed_plan_is_an_error_result_naming_the_field(door: Door) -> None:
    door.write_agents(first=door.llm(tools=["update_plan"]))
    bad = [{"content": "x", "status": "done"}]
    door.sim.script(reply(_use("p", bad)), Reply.text("ok"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("plan")))
    assert not [u for u in turn["updates"] if u.get("sessionUpdate") == "plan"]
    content = door.sim.requests[-1].body["messages"][-1]["content"]
    (result,) = [block for block in content if block["type"] == "tool_result"]
    assert result["is_error"] is True
    assert "update_plan: entries[0].status: Input should be" in result["content"]


def test_a_plan_step_has_the_statuses_and_priorities_of_an_acp_plan_entry() -> None:
    # The host's own (core/events.py, which the update_plan tool and a team's
    # plan take) and the ACP schema's: the door passes a step through as it is.
    assert get_args(PlanStatus) == get_args(PlanEntryStatus)
    assert get_args(PlanPriority) == get_args(PlanEntryPriority)
