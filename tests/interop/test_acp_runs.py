"""ACP agents through the real host: how a turn of an independent agent (the
official TypeScript SDK) becomes events and an AgentRunResult, session reuse,
and permissions (docs/protocol.md, "External backends")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from tests.builders import tool_use
from tests.interop.helpers import AcpConfig, spawned_pids, whoami
from tests.server.helpers import create


async def run(host: HostClient, agent: str, text: str) -> dict[str, Any]:
    result: dict[str, Any] = await host.request("agent/run", {"agentId": agent, "input": text})
    return result


async def test_initialize_lists_the_acp_backend() -> None:
    client = await HostClient.spawn()
    try:
        answer = await client.initialize()
        assert answer["capabilities"]["agent"]["backends"] == ["process", "acp"]
    finally:
        await client.close()


async def test_a_streamed_turn_maps_every_update_kind(host: HostClient, acp: AcpConfig) -> None:
    agent = await create(host, **acp())
    markers = "[thought][plan][image][future][usage][tool][failtool][chunks]"
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": markers, "partialResultToken": "p"}
    )
    events = host.progress("p")
    kinds = [
        event["type"] if event["type"] != "acp_update" else event["data"]["kind"]
        for event in events
    ]
    assert kinds == [
        "available_commands_update",  # sent before any turn: held for the first run
        "reasoning",
        "plan",
        "current_mode_update",
        "future_thing",  # a kind no schema knows, streamed as it came
        "agent_message_chunk",  # the image chunk: shown, not text
        "usage_update",
        "usage_update",
        "tool_use",
        "tool_result",
        "tool_use",
        "tool_result",
        "text",
        "text",
        "text",
    ]
    assert events[0]["data"] == {
        "kind": "available_commands_update",
        "availableCommands": [{"name": "review", "description": "review the changes"}],
    }
    assert events[1]["data"] == "thinking it over"
    assert events[4]["data"] == {"kind": "future_thing", "detail": 42}
    assert events[5]["data"]["content"]["type"] == "image"
    assert events[8]["data"] == tool_use("call-1", "Read a.txt", path="a.txt")
    assert events[9]["data"] == {
        "type": "tool_result",
        "tool_use_id": "call-1",
        "content": "contents of a.txt",
    }
    assert events[11]["data"]["is_error"] is True
    assert [event["data"] for event in events[-3:]] == ["one ", "two ", "three"]

    assert result["success"] is True and result["status"] == {"code": "ok"}
    assert result["output"] == "one two three"
    assert result["messages"] == [
        {"role": "assistant", "content": [{"type": "text", "text": "one two three"}]}
    ]
    assert result["tokenUsage"] == {"input_tokens": 100, "output_tokens": 0}
    read, failed = result["toolCalls"]
    assert read["toolName"] == "Read a.txt" and read["input"] == {"path": "a.txt"}
    assert read["output"] == "contents of a.txt"
    # ms from tool_call to its completion (not bounded here: the clock is the host's)
    assert isinstance(read["duration"], float) and read["duration"] >= 0
    assert failed["toolName"] == "Run tests" and failed["output"] == "2 tests failed"
    assert failed["input"] == {"command": "make test"}


async def test_an_intermediate_tool_call_update_is_an_acp_update_of_its_own_kind(
    host: HostClient, acp: AcpConfig
) -> None:
    """``kind`` is the update's ``sessionUpdate`` even when the update has a
    ``kind`` field of its own (a tool call's), which would otherwise hide it."""
    agent = await create(host, **acp())
    await host.request(
        "agent/stream", {"agentId": agent, "input": "[toolkind]", "partialResultToken": "k"}
    )
    events = host.progress("k")
    assert [event["type"] for event in events[1:4]] == ["tool_use", "acp_update", "tool_result"]
    assert events[2]["data"] == {
        "kind": "tool_call_update",
        "toolCallId": "call-3",
        "status": "in_progress",
    }


async def test_chunks_with_optional_fields_are_text_and_a_refused_update_is_dropped(
    host: HostClient, acp: AcpConfig
) -> None:
    """Plain text chunks take the bridge's shape test; these carry optional
    fields and go through the schema, in order with the rest, and a chunk the
    schema refuses (no content) is dropped without ending the turn."""
    agent = await create(host, **acp())
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "[rich]", "partialResultToken": "r"}
    )
    events = [(event["type"], event["data"]) for event in host.progress("r")]
    assert events[1:] == [("text", "alpha "), ("reasoning", "hmm"), ("text", "beta")]
    assert events[0][1]["kind"] == "available_commands_update"  # held since session/new
    assert result["status"] == {"code": "ok"} and result["output"] == "alpha beta"


async def test_runs_reuse_one_session_and_the_role_prompt_comes_first_only(
    host: HostClient, acp: AcpConfig, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    agent = await create(
        host, **acp("reuse", env={"ACP_AGENT_MARKER": str(marker)}, systemPrompt="ROLE")
    )
    first = await run(host, agent, "hello")
    assert first["output"] == "you said: ROLE\n\nhello"
    second = await run(host, agent, "again")
    assert second["output"] == "you said: again"
    prompted = await host.request("agent/prompt", {"agentId": agent, "input": "[whoami]"})
    me = whoami(prompted["output"])
    assert me["turn"] == "3" and me["session"] == "sess-1"
    assert await spawned_pids(marker) == [int(me["pid"])]
    history = await host.request("agent/history", {"agentId": agent})
    assert history["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "[whoami]"}]},
        {"role": "assistant", "content": [{"type": "text", "text": prompted["output"]}]},
    ]


async def test_usage_is_the_per_run_growth_of_the_cumulative_count(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    # The agent's context grows by 100 * turn each turn, reported twice a turn.
    usages = [(await run(host, agent, "[usage]"))["tokenUsage"] for _ in range(3)]
    assert [usage["input_tokens"] for usage in usages] == [100, 200, 300]
    state = await host.request("agent/state", {"agentId": agent})
    assert state["tokenUsage"] == {"input_tokens": 600, "output_tokens": 0}


@pytest.mark.parametrize(
    ("marker", "code"),
    [("[max_tokens]", "budget_exhausted"), ("[max_turn_requests]", "budget_exhausted")],
)
async def test_running_out_of_budget_sets_budget_exceeded(
    host: HostClient, acp: AcpConfig, marker: str, code: str
) -> None:
    agent = await create(host, **acp())
    result = await run(host, agent, marker)
    assert result["success"] is False and result["budgetExceeded"] is True
    assert result["status"]["code"] == code
    assert marker.strip("[]") in result["status"]["message"]
    assert result["output"] == f"stopping: {marker.strip('[]')}"


async def test_a_refusal_fails_the_run_and_keeps_the_session(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    before = whoami((await run(host, agent, "[whoami]"))["output"])
    refused = await run(host, agent, "[refuse]")
    assert refused["success"] is False and refused["status"]["code"] == "error"
    assert refused["errorInfo"]["kind"] == "refusal"
    assert "refused" in refused["status"]["message"]
    assert refused["output"] == "stopping: refuse"
    after = whoami((await run(host, agent, "[whoami]"))["output"])
    assert after["pid"] == before["pid"] and after["turn"] == "3"


async def test_reads_are_confined_and_writes_and_terminals_not_served_by_default(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp())
    capabilities = json.loads((await run(host, agent, "[caps]"))["output"])
    assert capabilities["fs"] == {"readTextFile": True, "writeTextFile": False}
    assert capabilities["terminal"] is False
    # /etc/hostname lies outside the agent's cwd (see test_acp_session.py for reads inside).
    assert (await run(host, agent, "[fs]"))["output"] == "fs: error -32602"
    assert (await run(host, agent, "[terminal]"))["output"] == "terminal: error -32601"


ALL = "allow_always,reject_always,reject_once,allow_once"


@pytest.mark.parametrize(
    ("permission", "offered", "chosen"),
    [
        ("auto-approve", ALL, "opt-allow_once"),
        ("auto-approve", "reject_once,allow_always,reject_always", "opt-allow_always"),
        ("auto-approve", "reject_once,reject_always", "cancelled"),
        ("reject", ALL, "opt-reject_once"),
        ("reject", "allow_once,reject_always", "opt-reject_always"),
        ("reject", "allow_once,allow_always", "cancelled"),
    ],
)
async def test_permission_policies_pick_the_least_privileged_option(
    host: HostClient, acp: AcpConfig, permission: str, offered: str, chosen: str
) -> None:
    agent = await create(host, **acp(permission=permission))
    result = await host.request(
        "agent/stream",
        {"agentId": agent, "input": f"[permission:{offered}]", "partialResultToken": "q"},
    )
    assert result["output"] == f"permission outcome: {chosen}"
    decision = [event["data"] for event in host.progress("q") if event["type"] == "permission"]
    assert decision == [
        {
            "title": "Write notes.txt",
            "kind": "edit",
            "optionKinds": offered.split(","),
            "decision": chosen.removeprefix("opt-"),
            **({} if chosen == "cancelled" else {"optionId": chosen}),
        }
    ]
    assert host.server_requests == []  # only ask-client asks the client


async def test_ask_client_sends_the_request_and_follows_the_answer(
    host: HostClient, acp: AcpConfig
) -> None:
    answers = iter([{"approve": True}, {"approve": False}, "not an answer"])
    host.handlers["agent/requestPermission"] = lambda params: next(answers)
    agent = await create(host, **acp("asker", permission="ask-client"))
    outputs = [(await run(host, agent, "[permission]"))["output"] for _ in range(3)]
    assert outputs == [
        "permission outcome: opt-allow_once",
        "permission outcome: opt-reject_once",
        "permission outcome: opt-reject_once",  # a malformed answer rejects
    ]
    assert host.server_requests[0] == (
        "agent/requestPermission",
        {
            "agentName": "asker",
            "title": "Write notes.txt",
            "kind": "edit",
            "optionKinds": ALL.split(","),
            "source": "acp",
        },
    )
    assert len(host.server_requests) == 3


async def test_ask_client_without_an_answer_in_time_rejects(
    host: HostClient, acp: AcpConfig
) -> None:
    async def late(params: Any) -> Any:
        await asyncio.sleep(3)
        return {"approve": True}

    host.handlers["agent/requestPermission"] = late
    agent = await create(host, **acp(permission="ask-client", hooks={"timeoutMs": 200}))
    result = await run(host, agent, "[permission]")
    assert result["output"] == "permission outcome: opt-reject_once"
    # A client that cannot answer (no handler: an error reply) is a rejection too.
    del host.handlers["agent/requestPermission"]
    result = await run(host, agent, "[permission]")
    assert result["output"] == "permission outcome: opt-reject_once"


async def test_concurrent_runs_on_one_agent_take_turns(host: HostClient, acp: AcpConfig) -> None:
    agent = await create(host, **acp())
    slow = asyncio.ensure_future(run(host, agent, "[slow]"))
    await asyncio.sleep(0.05)
    quick = await run(host, agent, "[whoami]")
    assert (await slow)["output"] == "first second"
    assert whoami(quick["output"])["turn"] == "2"


async def test_reset_drops_the_agents_session_and_the_next_run_opens_a_fresh_one(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(), systemPrompt="ROLE")
    await run(host, agent, "hello")
    before = whoami((await run(host, agent, "[whoami]"))["output"])
    assert before["turn"] == "2"
    assert await host.request("agent/reset", {"agentId": agent}) is None
    fresh = await run(host, agent, "hello again")
    # A new session: the role prompt leads its first prompt again.
    assert fresh["output"] == "you said: ROLE\n\nhello again"
    after = whoami((await run(host, agent, "[whoami]"))["output"])
    assert after["turn"] == "2" and after["pid"] != before["pid"]
