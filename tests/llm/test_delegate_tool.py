"""The ``delegate`` tool on the JSON-RPC door: an LLM agent (the provider
simulator scripting its ``tool_use`` of ``delegate``) hands a task to
another agent created on the same connection, a process agent or an ACP
agent (the TypeScript SDK's scripted agent), through a real ``oma-host``
over stdio. The delegate gets the task as text only; its events arrive
nested under the call; cancelling the caller ends it; depth and fan-out are
bounded; its tokens and cost count as the caller's (its budgets too); a name that is no agent
of the connection is refused at ``agent/create``."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.script import RecordedRequest
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.interop.helpers import whoami
from tests.npm_packages import ensure_npm_packages
from tests.providers.helpers import llm_config, tool_result_text
from tests.server.helpers import (
    create,
    expect_error,
    kill_quietly,
    process_config,
    wait_dead_async,
    wait_for_file,
)

KEY = "sk-ant-api03-delegate-test-key-DO-NOT-LEAK-42"
ACP_AGENT_DIR = Path(__file__).resolve().parent.parent / "interop" / "acp_agent"
ALLOW = [{"tool": "delegate", "action": "allow"}]
# Prints exactly what arrived on stdin, quoted, so any wrapping would show.
ECHO = "import sys; data = sys.stdin.read(); print(f'{len(data)} chars on stdin: {data!r}', end='')"


@pytest.fixture
def host_variables() -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": KEY}


@pytest.fixture
def host_options() -> dict[str, Any] | None:
    """Delegation is the subject, not the transport: the default one."""
    return None


@pytest.fixture(scope="module")
def acp_agent_script() -> str:
    ensure_npm_packages(ACP_AGENT_DIR, "@agentclientprotocol/sdk/package.json")
    return str(ACP_AGENT_DIR / "agent.mjs")


def echo_agent(name: str = "echo") -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "process", "command": sys.executable, "args": ["-c", ECHO]},
    }


def acp_agent(script: str, name: str = "coder", **backend: Any) -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "acp", "command": "node", "args": [script], **backend},
    }


def caller(sim: Simulator, delegates: list[str], **extra: Any) -> dict[str, Any]:
    """An LLM agent of the simulator, named ``lead`` unless given, with
    ``delegates`` and a rule allowing them unless ``permissions`` says
    otherwise (None: no rule)."""
    fields: dict[str, Any] = {"name": "lead", "permissions": ALLOW, **extra}
    config = llm_config(sim, "anthropic", delegates=delegates, **fields)
    return {key: value for key, value in config.items() if value is not None}


def delegate_call(call_id: str, agent: str, task: str) -> dict[str, Any]:
    return tool_use(call_id, "delegate", agent=agent, task=task)


def tool_results(sim: Simulator, request: int) -> list[dict[str, Any]]:
    """The tool results the host sent in the simulator's request ``request``."""
    content = sim.requests[request].body["messages"][-1]["content"]
    return [
        {k: v for k, v in block.items() if k != "cache_control"}
        for block in content
        if block["type"] == "tool_result"
    ]


async def wait_for_delegate_event(host: HostClient, token: str) -> None:
    """Until the first ``delegate`` event for ``token`` has arrived."""
    for _ in range(1200):
        if any(event["type"] == "delegate" for event in host.progress(token)):
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"no delegate event for {token!r}")


async def stream(host: HostClient, agent: str, token: str, text: str = "go") -> dict[str, Any]:
    params = {"agentId": agent, "input": text, "partialResultToken": token}
    result: dict[str, Any] = await host.request("agent/stream", params)
    return result


async def test_a_process_delegate_gets_the_task_as_text_and_answers_the_call(
    host: HostClient, sim: Simulator
) -> None:
    await create(host, **echo_agent())
    lead = await create(host, **caller(sim, ["echo"]))
    task = 'Summarise {"not": "json"} in one line'
    sim.script(reply(delegate_call("d1", "echo", task)), Reply.text("all done"))
    result = await stream(host, lead, "t")
    assert result["success"] is True and result["output"] == "all done"
    # The tools the model was offered: delegate, its agent one of the delegates.
    (tool,) = sim.requests[0].body["tools"]
    assert tool["name"] == "delegate"
    assert tool["input_schema"]["properties"]["agent"]["enum"] == ["echo"]
    assert tool["input_schema"]["required"] == ["agent", "task"]
    # The string-only boundary: the process read the task, as it was, on stdin.
    answer = f"{len(task)} chars on stdin: {task!r}"
    assert tool_results(sim, 1) == [{"type": "tool_result", "tool_use_id": "d1", "content": answer}]
    events = host.progress("t")
    kinds = [event["type"] for event in events]
    first, last = kinds.index("tool_use"), kinds.index("tool_result")
    nested = [event["data"] for event in events if event["type"] == "delegate"]
    assert nested and all(first < i < last for i, k in enumerate(kinds) if k == "delegate")
    assert {(data["toolUseId"], data["agent"]) for data in nested} == {("d1", "echo")}
    assert "".join(d["event"]["data"] for d in nested if d["event"]["type"] == "text") == answer
    permission = next(event["data"] for event in events if event["type"] == "permission")
    assert (permission["tool"], permission["target"], permission["by"]) == (
        "delegate",
        "echo",
        "rule",
    )
    (record,) = result["toolCalls"]
    assert (record["toolName"], record["output"]) == ("delegate", answer)


async def test_an_acp_delegate_streams_nested_and_keeps_to_text(
    host: HostClient, sim: Simulator, acp_agent_script: str
) -> None:
    await create(host, **acp_agent(acp_agent_script))
    lead = await create(host, **caller(sim, ["coder"]))
    sim.script(
        reply(delegate_call("d1", "coder", "count for me [chunks]")),
        reply(delegate_call("d2", "coder", "plain words")),
        Reply.text("thanks"),
    )
    result = await stream(host, lead, "a")
    assert result["success"] is True, result
    assert tool_results(sim, 1)[0]["content"] == "one two three"
    # The ACP agent's reply to a plain prompt quotes the text it was sent.
    assert tool_results(sim, 2)[0]["content"] == "you said: plain words"
    nested = [e["data"] for e in host.progress("a") if e["type"] == "delegate"]
    inner = [d["event"] for d in nested if d["toolUseId"] == "d1"]
    assert [event["data"] for event in inner if event["type"] == "text"] == [
        "one ",
        "two ",
        "three",
    ]
    # What the ACP agent announced is there too, as it streamed it.
    assert "acp_update" in {event["type"] for event in inner}
    assert {d["agent"] for d in nested} == {"coder"}


def _limits_of(pid: int) -> str:
    """The OMA_HOST_DELEGATION a running process was started with."""
    with open(f"/proc/{pid}/environ", "rb") as environ:
        entries = environ.read().split(b"\0")
    (value,) = [e for e in entries if e.startswith(b"OMA_HOST_DELEGATION=")]
    return value.decode().split("=", 1)[1]


async def test_an_acp_agents_process_carries_the_limits_of_the_run_that_started_it(
    host: HostClient, sim: Simulator, acp_agent_script: str
) -> None:
    """Run directly, the ACP agent's process gets the root's room; handed a
    task by ``lead``, a run one level down, it is started afresh with the
    smaller room, and kept for the next delegation at that room."""
    coder = await create(host, **acp_agent(acp_agent_script))
    lead = await create(host, **caller(sim, ["coder"]))
    direct = await host.request("agent/run", {"agentId": coder, "input": "[whoami]"})
    first = int(whoami(direct["output"])["pid"])
    assert _limits_of(first) == "depth=3,calls=16"
    pids = []
    for call_id in ("d1", "d2"):
        sim.script(reply(delegate_call(call_id, "coder", "[whoami]")), Reply.text("ok"))
        assert (await stream(host, lead, call_id))["success"] is True
        pids.append(int(whoami(tool_results(sim, -1)[0]["content"])["pid"]))
    assert pids[0] != first and pids[1] == pids[0]
    assert _limits_of(pids[0]) == "depth=2,calls=15"
    assert await wait_dead_async(first)


async def test_cancelling_the_caller_ends_a_process_delegate(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 60 & echo $$ $! > {pids}; echo working; wait"
    await create(host, **process_config("worker", script))
    lead = await create(host, **caller(sim, ["worker"]))
    sim.script(reply(delegate_call("d1", "worker", "work")), Reply.text("unreached"))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": lead, "input": "go", "partialResultToken": "c"}
    )
    child, grandchild = (int(pid) for pid in (await wait_for_file(pids)).split())
    try:
        await wait_for_delegate_event(host, "c")
        host.cancel(msg_id)
        response = await asyncio.wait_for(pending, 30)
        assert response["error"]["code"] == -32800
        partial = response["error"]["data"]["partial"]
        assert partial["status"]["code"] == "cancelled"
        assert partial["tokenUsage"]["input_tokens"] == 10  # the caller's one turn
        assert await wait_dead_async(child) and await wait_dead_async(grandchild)
    finally:
        kill_quietly(child)
        kill_quietly(grandchild)
    assert len(sim.requests) == 1  # the model was never asked again


async def test_cancelling_the_caller_cancels_an_acp_delegates_turn(
    host: HostClient, sim: Simulator, acp_agent_script: str, tmp_path: Path
) -> None:
    marker = tmp_path / "agent-pids"
    await create(host, **acp_agent(acp_agent_script, env={"ACP_AGENT_MARKER": str(marker)}))
    lead = await create(host, **caller(sim, ["coder"]))
    sim.script(reply(delegate_call("d1", "coder", "wait [hang]")))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": lead, "input": "go", "partialResultToken": "h"}
    )
    await wait_for_delegate_event(host, "h")
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 30)
    assert response["error"]["code"] == -32800
    # The agent was told session/cancel: its hung turn ended, and the same
    # process goes on with the session's next turn.
    sim.script(reply(delegate_call("d2", "coder", "[whoami]")), Reply.text("ok"))
    result = await stream(host, lead, "w")
    assert result["success"] is True, result
    me = whoami(tool_results(sim, 2)[0]["content"])
    (pid,) = (int(line) for line in marker.read_text().split())
    assert (int(me["pid"]), me["turn"]) == (pid, "2")


async def test_an_acp_delegate_that_ignores_the_cancel_is_ended(
    host: HostClient, sim: Simulator, acp_agent_script: str, tmp_path: Path
) -> None:
    marker = tmp_path / "agent-pids"
    await create(host, **acp_agent(acp_agent_script, env={"ACP_AGENT_MARKER": str(marker)}))
    lead = await create(host, **caller(sim, ["coder"]))
    sim.script(reply(delegate_call("d1", "coder", "ignore me [deaf]")))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": lead, "input": "go", "partialResultToken": "x"}
    )
    await wait_for_delegate_event(host, "x")
    (pid,) = (int(line) for line in (await wait_for_file(marker)).split())
    try:
        host.cancel(msg_id)
        response = await asyncio.wait_for(pending, 30)
        assert response["error"]["code"] == -32800
        assert await wait_dead_async(pid, 20)  # after the bridge's grace for a cancel
    finally:
        kill_quietly(pid)


async def test_a_delegate_that_delegates_is_refused_past_the_depth(
    host: HostClient, sim: Simulator
) -> None:
    await create(host, **echo_agent())
    await create(host, **caller(sim, ["echo"], name="middle"))
    lead = await create(host, **caller(sim, ["middle"], delegation={"maxDepth": 1}))
    sim.script(
        reply(delegate_call("d1", "middle", "ask echo")),  # lead
        reply(delegate_call("d2", "echo", "hi")),  # middle, one level down
        Reply.text("echo is out of reach"),  # middle
        Reply.text("done"),  # lead
    )
    result = await stream(host, lead, "d")
    assert result["success"] is True
    (refused,) = tool_results(sim, 2)
    assert refused["is_error"] is True
    assert refused["content"].startswith("delegate: this run is 1 delegation(s) deep")
    assert tool_results(sim, 3)[0]["content"] == "echo is out of reach"
    # The middle agent's own events came nested, its refused call among them.
    inner = [e["data"]["event"] for e in host.progress("d") if e["type"] == "delegate"]
    inner_results = [event["data"] for event in inner if event["type"] == "tool_result"]
    assert inner_results == [refused]


async def test_the_delegations_of_one_request_are_bounded(host: HostClient, sim: Simulator) -> None:
    await create(host, **echo_agent())
    lead = await create(host, **caller(sim, ["echo"], delegation={"maxCalls": 2}))
    calls = [delegate_call(f"d{n}", "echo", f"task {n}") for n in range(3)]
    sim.script(Reply(content=calls), Reply.text("done"))
    result = await stream(host, lead, "f")
    assert result["success"] is True
    first, second, third = tool_results(sim, 1)
    assert "is_error" not in first and "is_error" not in second
    assert third["is_error"] is True
    assert "2 delegations have been made for this request" in third["content"]


async def test_hosts_started_from_the_shell_run_a_level_down_each(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """A model that answers every task by running ``oma-host call`` on its
    own config from the shell (at most six times, which bounds the test).
    The shell's commands get ``OMA_HOST_DELEGATION``, so each host started
    that way runs the agent one level down, and one started beneath a run
    with no room left runs no agent: with ``maxDepth`` 1, two hosts start
    and the second refuses its run."""
    started = tmp_path / "hosts-started"
    config = llm_config(
        sim,
        "anthropic",
        name="looper",
        apiKey=KEY,  # the host's variable is no command's
        tools=["shell"],
        cwd=str(tmp_path),
        permissions=[{"tool": "shell", "action": "allow"}],
        delegation={"maxDepth": 1},
    )
    params = json.dumps({"config": config, "input": "go"})
    command = (
        f"echo $$ >> {shlex.quote(str(started))}; "
        f"{shlex.quote(sys.executable)} -m oma_host call oma/runAgent {shlex.quote(params)}"
    )
    asked: list[int] = []

    def model(request: RecordedRequest) -> Reply:
        seen = tool_result_text(request)
        if seen is not None:
            return Reply.text(f"shell said: {seen}")
        asked.append(len(asked) + 1)
        if len(asked) > 6:
            return Reply.text("enough")
        call = {"type": "tool_use", "id": f"s{asked[-1]}", "name": "shell"}
        return reply({**call, "input": {"command": command}})

    sim.responder = model
    agent = await create(host, **config)
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=120)
    assert result["success"] is True
    assert len(started.read_text().split()) == 2
    assert len(asked) == 2  # the second host's run never reached the model
    assert "this host was started beneath a run that may delegate no deeper" in result["output"]
    assert "OMA_HOST_DELEGATION=depth=0,calls=16" in result["output"]
    # The second host's result, as the first host's output quotes it.
    assert '\\"kind\\": \\"delegation\\"' in result["output"]


async def test_a_reply_of_ten_delegations_stays_within_the_token_budget(
    host: HostClient, sim: Simulator
) -> None:
    """``maxTokenBudget`` 500, and one reply that calls ``delegate`` ten
    times, each delegate's reply reporting 5,000 tokens. The first delegate
    may spend only what the caller has left, and the budget is checked
    after each tool call: the run ends after the first delegation, the
    other nine are not run, and the total stays within the budget plus one
    model reply."""
    await create(host, **llm_config(sim, "anthropic", name="helper"))
    lead = await create(host, **caller(sim, ["helper"], maxTokenBudget=500))
    calls = [delegate_call(f"d{n}", "helper", f"task {n}") for n in range(10)]
    big = {"input_tokens": 4_000, "output_tokens": 1_000}
    sim.script(
        Reply(content=calls, usage={"input_tokens": 90, "output_tokens": 10}),  # lead
        *[Reply.text(f"done {n}", usage=big) for n in range(10)],  # helpers
    )
    result = await stream(host, lead, "t")
    assert result["status"]["code"] == "budget_exhausted"
    assert result["errorInfo"]["kind"] == "max_tokens"
    used = result["tokenUsage"]["input_tokens"] + result["tokenUsage"]["output_tokens"]
    assert used <= 500 + 5_000, used
    assert used == 100 + 5_000
    assert "maxTokenBudget=500 exceeded: 5100 tokens used" in result["status"]["message"]
    assert len(sim.requests) == 2  # the lead's reply and one delegate's
    results = [e["data"] for e in host.progress("t") if e["type"] == "tool_result"]
    assert len(results) == 10
    first, *rest = results
    # The delegate was given the 400 tokens the caller had left as its budget.
    assert "maxTokenBudget=400 (what its caller had left) exceeded" in first["content"]
    assert all(r["content"].startswith("Not run: the run ended. maxTokenBudget=500") for r in rest)


async def test_delegate_usage_and_cost_count_toward_the_callers_budget(
    host: HostClient, sim: Simulator
) -> None:
    prices = {"input": 1.0, "output": 2.0}
    helper = llm_config(sim, "anthropic", name="helper", pricing={"input": 10.0, "output": 20.0})
    await create(host, **helper)
    lead = await create(
        host, **caller(sim, ["helper"], pricing=prices, maxTokenBudget=100, maxTurns=5)
    )
    sim.script(
        reply(delegate_call("d1", "helper", "think hard")),  # lead: 10 + 5
        Reply.text("deep thoughts", usage={"input_tokens": 200, "output_tokens": 50}),  # helper
    )
    result = await stream(host, lead, "b")
    assert result["status"]["code"] == "budget_exhausted"
    assert result["tokenUsage"] == {"input_tokens": 210, "output_tokens": 55}
    assert "265 tokens used" in result["status"]["message"]
    own = (10 * 1.0 + 5 * 2.0) / 1e6
    delegated = (200 * 10.0 + 50 * 20.0) / 1e6
    assert result["cost"]["amount"] == pytest.approx(own + delegated)
    # The budget is checked after the tool call: the run ended before the lead's next reply.
    assert len(sim.requests) == 2


async def test_a_delegates_cost_ends_the_callers_run_by_its_cost_budget(
    host: HostClient, sim: Simulator
) -> None:
    helper = llm_config(sim, "anthropic", name="helper", pricing={"input": 10.0, "output": 20.0})
    helper_id = await create(host, **helper)
    prices = {"input": 1.0, "output": 2.0}
    # The caller's own replies cost $0.00002 each: the budget is the delegate's to spend.
    lead = await create(host, **caller(sim, ["helper"], pricing=prices, maxCostBudget=0.002))
    sim.script(
        reply(delegate_call("d1", "helper", "think hard")),  # lead
        Reply.text("deep thoughts", usage={"input_tokens": 200, "output_tokens": 50}),  # helper
    )
    result = await stream(host, lead, "c")
    own = (10 * 1.0 + 5 * 2.0) / 1e6
    delegated = (200 * 10.0 + 50 * 20.0) / 1e6
    assert result["status"]["code"] == "budget_exhausted"
    assert result["errorInfo"]["kind"] == "budget" and result["budgetExceeded"] is True
    assert (
        f"maxCostBudget=0.002 USD reached: {own + delegated:.6g} USD spent"
        in (result["status"]["message"])
    )
    assert result["cost"]["amount"] == pytest.approx(own + delegated)
    assert len(sim.requests) == 2  # the run ended after the delegation, not a reply later
    # The caller's agent/state counts the same cost; the delegate's its own.
    state = await host.request("agent/state", {"agentId": lead})
    assert state["cost"]["amount"] == pytest.approx(own + delegated)
    helper_cost = (await host.request("agent/state", {"agentId": helper_id}))["cost"]
    assert helper_cost["amount"] == pytest.approx(delegated)


async def test_an_unpriced_llm_delegate_makes_the_callers_cost_unknown_a_process_one_adds_none(
    host: HostClient, sim: Simulator
) -> None:
    await create(host, **echo_agent())
    await create(host, **llm_config(sim, "anthropic", name="unpriced"))  # sim-1: no known price
    prices = {"input": 1.0, "output": 2.0}
    lead = await create(host, **caller(sim, ["echo", "unpriced"], pricing=prices))
    sim.script(reply(delegate_call("d1", "echo", "hi")), Reply.text("done"))
    result = await stream(host, lead, "p")
    own = 2 * (10 * 1.0 + 5 * 2.0) / 1e6
    # A process delegate has no model's prices: its run adds no cost, and no unknown.
    assert result["cost"]["amount"] == pytest.approx(own)
    state = await host.request("agent/state", {"agentId": lead})
    assert state["cost"]["amount"] == pytest.approx(own)
    sim.script(
        reply(delegate_call("d2", "unpriced", "hi")),
        Reply.text("hello"),  # the unpriced delegate's
        Reply.text("done"),
    )
    result = await stream(host, lead, "u")
    assert result["success"] is True and result["tokenUsage"]["input_tokens"] == 30
    assert "cost" not in result  # never a guess
    assert "cost" not in await host.request("agent/state", {"agentId": lead})


async def test_a_failed_or_disposed_delegate_is_an_error_result(
    host: HostClient, sim: Simulator
) -> None:
    await create(host, **process_config("broken", "echo 'no such file' >&2; exit 3"))
    gone = await create(host, **echo_agent("gone"))
    lead = await create(host, **caller(sim, ["broken", "gone"]))
    await host.request("agent/dispose", {"agentId": gone})
    sim.script(
        reply(delegate_call("d1", "broken", "x"), delegate_call("d2", "gone", "y")),
        reply(delegate_call("d3", "nobody", "z")),
        Reply.text("sorry"),
    )
    result = await stream(host, lead, "e")
    assert result["success"] is True
    failed, disposed = tool_results(sim, 1)
    assert failed["is_error"] and disposed["is_error"]
    assert (
        failed["content"] == "delegate: agent 'broken' failed: sh exited with code 3: no such file"
    )
    assert "agent 'gone' is no longer in this session" in disposed["content"]
    (unknown,) = tool_results(sim, 2)
    assert unknown["is_error"] is True
    assert "'nobody' is not an agent this one may delegate to" in unknown["content"]


async def test_the_client_is_asked_by_default_and_a_refusal_runs_nothing(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    ran = tmp_path / "ran"
    await create(host, **process_config("worker", f"touch {ran}"))
    lead = await create(host, **caller(sim, ["worker"], permissions=None))
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    sim.script(reply(delegate_call("d1", "worker", "go")), Reply.text("ok"))
    result = await stream(host, lead, "p")
    assert result["success"] is True
    asks = [
        params for method, params in host.server_requests if method == "agent/requestPermission"
    ]
    assert [(a["title"], a["tool"]["name"]) for a in asks] == [("delegate worker", "delegate")]
    (denied,) = tool_results(sim, 1)
    assert denied["is_error"] is True and "permission denied" in denied["content"]
    assert not ran.exists()
    assert not [e for e in host.progress("p") if e["type"] == "delegate"]


async def test_delegates_are_checked_when_the_agent_is_created(
    host: HostClient, sim: Simulator
) -> None:
    await create(host, **echo_agent())
    error = await expect_error(
        host.request("agent/create", {"config": caller(sim, ["echo", "reviewer"])}),
        -32602,
        "InvalidParams",
    )
    assert str(error.message) == (
        "agent/create: params.config.delegates[1]: no agent named 'reviewer' on this "
        "connection; create it first (agents: echo)"
    )
    error = await expect_error(
        host.request("agent/create", {"config": {**echo_agent("x"), "delegates": ["echo"]}}),
        -32602,
        "InvalidParams",
    )
    assert "only an LLM agent (one without a backend) can delegate" in error.message
    error = await expect_error(
        host.request("agent/create", {"config": caller(sim, ["lead"])}), -32602, "InvalidParams"
    )
    assert "delegates[0]: agent 'lead' cannot delegate to itself" in error.message
    error = await expect_error(
        host.request("agent/create", {"config": caller(sim, ["echo"], delegation={"maxDepth": 0})}),
        -32602,
        "InvalidParams",
    )
    assert "delegation.maxDepth" in error.message
    # A one-off run has no session to find delegates in.
    error = await expect_error(
        host.request("oma/runAgent", {"config": caller(sim, ["echo"]), "input": "hi"}),
        -32602,
        "InvalidParams",
    )
    assert "config.delegates: agent 'lead' names agents to delegate to" in error.message
    # Nor does a team's: tasks hand work on along dependsOn.
    members = [echo_agent(), caller(sim, ["echo"])]
    tasks = [{"title": "t", "description": "d", "assignee": "echo"}]
    error = await expect_error(
        host.request("oma/runTasks", {"team": {"agents": members}, "tasks": tasks}),
        -32602,
        "InvalidParams",
    )
    assert "delegates: a team's agents cannot delegate" in error.message
    assert json.dumps(await host.request("agent/list", {})).count('"name"') == 1
