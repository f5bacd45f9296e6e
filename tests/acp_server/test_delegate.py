"""The ``delegate`` tool behind the ACP door, through the official
TypeScript SDK's client: an LLM agent of the agents file (the provider
simulator scripting its ``delegate`` call) hands a task to another agent of
the file, an ACP agent (the SDK's scripted agent) or a process agent. The
editor sees one ``tool_call`` whose content streams the delegate's text, is
asked before it runs, and cancelling the turn ends the delegate. A file
whose delegates name no agent of it, or loop, is refused at start."""

from __future__ import annotations

import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from oma_host.acp_server.agents import AgentsFileError, load_agents
from oma_host.acp_server.updates import LIVE_OUTPUT_CHARS
from oma_host.testing.script import RecordedRequest
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import (
    Door,
    acp_agent,
    initialize,
    new_session,
    prompt,
    refused_agents_file,
    reply_text,
    text,
)
from tests.builders import reply, tool_use
from tests.providers.helpers import tool_result_text
from tests.server.helpers import kill_quietly, wait_dead

# Prints exactly what arrived on stdin, quoted, so any wrapping would show.
ECHO = "import sys; data = sys.stdin.read(); print(f'{len(data)} chars on stdin: {data!r}', end='')"


def delegate_call(call_id: str, agent: str, task: str) -> dict[str, Any]:
    return tool_use(call_id, "delegate", agent=agent, task=task)


def lead(door: Door, *delegates: str) -> dict[str, Any]:
    return door.llm("lead", delegates=list(delegates))


def process_agent(name: str, *args: str) -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "process", "command": sys.executable, "args": list(args)},
    }


def calls_of(updates: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    """The tool call updates of ``call_id``, the tool_call first."""
    return [
        update
        for update in updates
        if update.get("sessionUpdate") in ("tool_call", "tool_call_update")
        and update.get("toolCallId") == call_id
    ]


def content_text(update: dict[str, Any]) -> str:
    (content,) = update["content"]
    text_block: str = content["content"]["text"]
    return text_block


def test_an_acp_delegate_is_one_tool_call_streaming_its_text(
    door: Door, acp_agent_dir: Path
) -> None:
    door.write_agents(acp_agent("coder"), first=lead(door, "coder"))
    door.sim.script(
        reply(delegate_call("d1", "coder", "count for me [chunks]")),
        Reply.text("the coder counted"),
    )
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("count")), permission="allow_once"
    )
    assert turn["result"]["stopReason"] == "end_turn"
    updates = turn["updates"]
    start, *progress, end = calls_of(updates, "d1")
    assert (start["sessionUpdate"], start["title"], start["kind"]) == (
        "tool_call",
        "delegate",
        "execute",
    )
    assert start["rawInput"] == {"agent": "coder", "task": "count for me [chunks]"}
    # The editor was asked about the call it was shown.
    (asked,) = [u["permissionRequest"] for u in updates if "permissionRequest" in u]
    assert asked["toolCall"]["toolCallId"] == "d1"
    # The delegate's text streams as the call's content, each update the text so far.
    assert progress, "no update streamed the delegate's text"
    streamed = [content_text(update) for update in progress]
    assert all("one two three".startswith(shown) for shown in streamed)
    assert streamed == sorted(streamed, key=len)
    assert (end["status"], content_text(end)) == ("completed", "one two three")
    # The delegate's words are the call's, not the caller's reply.
    assert reply_text(updates) == "the coder counted"
    # Nothing else of the delegate's reaches the editor: no tool call but the
    # one, not the commands the scripted agent announces (its "review").
    calls = {u["toolCallId"] for u in updates if "toolCallId" in u}
    assert calls == {"d1"}
    announced = [
        command["name"]
        for update in updates
        if update.get("sessionUpdate") == "available_commands_update"
        for command in update["availableCommands"]
    ]
    assert "review" not in announced


def test_a_process_delegate_reads_the_task_as_text_alone(door: Door) -> None:
    door.write_agents(process_agent("echo", "-c", ECHO), first=lead(door, "echo"))
    task = 'Check [{"type": "image"}] and reply'
    door.sim.script(reply(delegate_call("d1", "echo", task)), Reply.text("echoed"))
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("go")), permission="allow_once"
    )
    answer = f"{len(task)} chars on stdin: {task!r}"
    *_, end = calls_of(turn["updates"], "d1")
    assert (end["status"], content_text(end)) == ("completed", answer)
    results = [
        block
        for block in door.sim.requests[1].body["messages"][-1]["content"]
        if block["type"] == "tool_result"
    ]
    assert [result["content"] for result in results] == [answer]


def test_a_long_delegate_text_shows_its_end_while_it_streams(door: Door) -> None:
    # 40,000 characters, a pause (updates go out meanwhile), then the end.
    script = (
        "import sys, time; sys.stdin.read(); print('a' * 39990 + 'z' * 10, end='', flush=True); "
        "time.sleep(0.5); print(' end', end='')"
    )
    door.write_agents(process_agent("long", "-c", script), first=lead(door, "long"))
    door.sim.script(reply(delegate_call("d1", "long", "write")), Reply.text("ok"))
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("go")), permission="allow_once"
    )
    *progress, end = calls_of(turn["updates"], "d1")[1:]
    shown = [content_text(update) for update in progress]
    # As a running shell command's output: the text so far, kept to its end.
    cut = [text for text in shown if len(text) == LIVE_OUTPUT_CHARS]
    assert cut, "no streamed update was cut to the text's end"
    assert all(len(text) <= LIVE_OUTPUT_CHARS for text in shown)
    assert all(text.startswith("a") for text in cut)
    assert cut[0].endswith("z" * 10) or cut[0].endswith(" end")
    assert content_text(end) == "a" * 39990 + "z" * 10 + " end"


def test_an_llm_delegates_cost_is_in_the_turns_usage_update_and_budget(door: Door) -> None:
    # The lead's replies cost $0.00002 each, the helper's one $0.003: the
    # budget is reached only with what the helper spent.
    helper = door.llm("helper", pricing={"input": 10.0, "output": 20.0})
    first = door.llm(
        "lead", delegates=["helper"], pricing={"input": 1.0, "output": 2.0}, maxCostBudget=0.002
    )
    door.write_agents(helper, first=first)
    door.sim.script(
        reply(delegate_call("d1", "helper", "think")),  # lead
        Reply.text("thought", usage={"input_tokens": 200, "output_tokens": 50}),  # helper
    )
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("go")), permission="allow_once"
    )
    assert turn["result"]["stopReason"] == "max_tokens"  # ACP's word for a spent budget
    (usage,) = [u for u in turn["updates"] if u.get("sessionUpdate") == "usage_update"]
    own = (10 * 1.0 + 5 * 2.0) / 1e6
    delegated = (200 * 10.0 + 50 * 20.0) / 1e6
    assert usage["cost"]["amount"] == pytest.approx(own + delegated)
    assert len(door.sim.requests) == 2  # the budget ended the turn after the delegation


def test_a_refused_delegation_runs_nothing(door: Door, tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    door.write_agents(
        process_agent("worker", "-c", f"open({str(ran)!r}, 'w')"), first=lead(door, "worker")
    )
    door.sim.script(reply(delegate_call("d1", "worker", "go")), Reply.text("ok"))
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("go")), permission="reject_once"
    )
    assert turn["result"]["stopReason"] == "end_turn"
    *_, end = calls_of(turn["updates"], "d1")
    assert end["status"] == "failed"
    assert "permission denied" in content_text(end)
    assert not ran.exists()


def test_cancelling_the_turn_ends_the_delegates_process(door: Door, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 60 & echo $$ $! > {pids}; echo working; wait"
    worker = {
        "name": "worker",
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script]},
    }
    door.write_agents(worker, first=lead(door, "worker"))
    door.sim.script(reply(delegate_call("d1", "worker", "work")), Reply.text("unreached"))
    cancelled = prompt(text("go"))
    cancelled["cancelOnUpdate"] = "tool_call_update"
    try:
        _, _, turn = door.run(
            initialize(), new_session(door.cwd), cancelled, permission="allow_once"
        )
        assert turn["result"]["stopReason"] == "cancelled"
        streamed = [u for u in calls_of(turn["updates"], "d1") if "content" in u]
        assert content_text(streamed[0]) == "working\n"
        child, grandchild = (int(pid) for pid in pids.read_text().split())
        assert wait_dead(child) and wait_dead(grandchild)
    finally:
        if pids.exists():
            for pid in pids.read_text().split():
                kill_quietly(int(pid))
    assert len(door.sim.requests) == 1


def test_a_delegation_cycle_through_an_acp_agent_stops_at_the_depth(door: Door) -> None:
    """``lead`` delegates to ``inner``, an ``oma-host acp`` serving the same
    agents file, whose default agent is ``lead`` again: a loop no check of
    the file can see. The model delegates whenever it is handed a task (at
    most six times, which bounds the test). Every host counts from the
    limits it was started with (``OMA_HOST_DELEGATION``): with ``maxDepth``
    2, one nested host starts, and its ``lead`` is refused the next one."""
    started = door.tmp / "hosts-started"
    nested_host = 'echo "$$" >> "$0"; exec "$1" -m oma_host acp --agents "$2" --state-dir "$3"'
    args = [str(started), sys.executable, str(door.agents_file), str(door.state)]
    inner = {
        "name": "inner",
        "backend": {"kind": "acp", "command": "sh", "args": ["-c", nested_host, *args]},
    }
    first = door.llm(
        "lead",
        delegates=["inner"],
        delegation={"maxDepth": 2, "maxCalls": 2},
        permissions=[{"tool": "delegate", "action": "allow"}],
    )
    door.write_agents(inner, first=first)
    delegations = itertools.count(1)
    asked: list[int] = []

    def model(request: RecordedRequest) -> Reply:
        seen = tool_result_text(request)
        if seen is not None:
            return Reply.text(f"inner said: {seen}")
        asked.append(next(delegations))
        if len(asked) > 6:
            return Reply.text("enough")
        return reply(delegate_call(f"d{asked[-1]}", "inner", "go on"))

    door.sim.responder = model
    began = time.monotonic()
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("loop")))
    assert time.monotonic() - began < 60
    assert turn["result"]["stopReason"] == "end_turn"
    assert len(started.read_text().split()) == 1  # one nested host, not a chain
    assert len(asked) == 2  # the outer lead's delegation and the nested one's, refused
    said = reply_text(turn["updates"])
    assert "inner said: inner said: delegate: this run is 0 delegation(s) deep" in said
    assert "this host was started with OMA_HOST_DELEGATION=depth=1,calls=1" in said


@pytest.mark.parametrize(
    ("agents", "expected"),
    [
        (
            [{"name": "a", "model": "m", "delegates": ["b"]}],
            "$[0].delegates[0]: no agent named 'b' (agents: a)",
        ),
        (
            [
                {"name": "a", "model": "m", "delegates": ["b"]},
                {"name": "b", "model": "m", "delegates": ["c"]},
                {"name": "c", "model": "m", "delegates": ["a"]},
            ],
            "$[0].delegates: the delegates form a loop: a -> b -> c -> a",
        ),
        (
            [{"name": "a", "model": "m", "delegates": ["a"]}],
            "$[0].delegates[0]: agent 'a' cannot delegate to itself",
        ),
        (
            [
                {"name": "a", "model": "m"},
                {"name": "p", "backend": {"kind": "process", "command": "cat"}, "delegates": ["a"]},
            ],
            "$[1].delegates: only an LLM agent (one without a backend) can delegate",
        ),
    ],
)
def test_a_file_whose_delegates_cannot_be_found_or_loop_is_refused(
    tmp_path: Path, agents: list[dict[str, Any]], expected: str
) -> None:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(agents))
    with pytest.raises(AgentsFileError) as refused:
        load_agents(str(path))
    assert str(refused.value).startswith(f"{path}: {expected}")


def test_oma_host_acp_serves_no_session_on_a_delegate_loop(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text(
        '[{"name": "a", "model": "m", "delegates": ["b"]},'
        ' {"name": "b", "model": "m", "delegates": ["a"]}]'
    )
    error, stderr = refused_agents_file(path)
    assert error["message"].endswith("$[0].delegates: the delegates form a loop: a -> b -> a")
    (line,) = stderr.strip().splitlines()
    assert line.endswith("$[0].delegates: the delegates form a loop: a -> b -> a")
