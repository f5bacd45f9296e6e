"""$/cancelRequest, timeouts, and the process bridge
(docs/protocol.md, "Cancellation and progress", "External backends")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from oma_host.cli.client import HostClient
from tests.server.helpers import (
    PY,
    create,
    expect_error,
    kill_quietly,
    process_config,
    wait_dead,
    wait_for_file,
    wait_for_progress,
)


async def test_cancel_kills_the_process_tree_and_returns_partial_output(
    host: HostClient, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 60 & echo $$ $! > {pids}; echo partial line; wait"
    agent = await create(host, **process_config("tree", script, input="none"))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "c"}
    )
    child, grandchild = (int(pid) for pid in (await wait_for_file(pids)).split())
    try:
        await wait_for_progress(host, "c")
        host.cancel(msg_id)
        response = await asyncio.wait_for(pending, 15)
        error = response["error"]
        assert error["code"] == -32800
        assert error["data"]["type"] == "RequestCancelled"
        partial = error["data"]["partial"]
        assert partial["status"]["code"] == "cancelled" and partial["aborted"] is True
        assert partial["output"] == "partial line\n"
        assert wait_dead(child) and wait_dead(grandchild)
    finally:
        kill_quietly(child)
        kill_quietly(grandchild)
    assert await host.request("agent/list", {})


async def test_cancel_of_an_llm_stream_returns_what_was_streamed(host: HostClient) -> None:
    agent = await create(host, name="slow", provider="test", model="slow-echo")
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "a long answer", "partialResultToken": "s"}
    )
    await wait_for_progress(host, "s", 2)
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 10)
    partial = response["error"]["data"]["partial"]
    streamed = "".join(event["data"] for event in host.progress("s"))
    assert partial["output"] and streamed.startswith(partial["output"])


async def test_cancelled_prompt_leaves_history_unchanged(host: HostClient) -> None:
    agent = await create(host, name="slow", provider="test", model="slow-echo")
    msg_id, pending = host.start_request("agent/prompt", {"agentId": agent, "input": "x"})
    await asyncio.sleep(0.2)
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 10)
    assert response["error"]["code"] == -32800
    assert (await host.request("agent/history", {"agentId": agent})) == {"messages": []}


async def test_timeout_fails_the_run_and_kills_the_process(
    host: HostClient, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    agent = await create(
        host,
        **process_config("late", f"echo $$ > {pidfile}; echo started; sleep 60", input="none"),
        timeoutMs=2000,  # "started" must arrive first, even on a loaded machine
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False
    assert result["status"]["code"] == "timeout"
    assert result["output"] == "started\n"
    assert wait_dead(int(pidfile.read_text()))


async def test_input_modes_and_system_prompt(host: HostClient) -> None:
    stdin_agent = await create(
        host, name="s", systemPrompt="ROLE", backend={"kind": "process", "command": "cat"}
    )
    result = await host.request("agent/run", {"agentId": stdin_agent, "input": "question"})
    assert result == {**result, "success": True, "output": "ROLE\n\nquestion"}
    assert result["tokenUsage"] == {"input_tokens": 0, "output_tokens": 0}
    assert result["messages"] == [
        {"role": "assistant", "content": [{"type": "text", "text": "ROLE\n\nquestion"}]}
    ]
    argv_printer = "import json, sys; print(json.dumps(sys.argv[1:]))"
    arg_agent = await create(
        host,
        name="a",
        systemPrompt="ROLE",
        backend={
            "kind": "process",
            "command": PY,
            "args": ["-c", argv_printer, "fixed"],
            "input": "argument",
        },
    )
    result = await host.request("agent/run", {"agentId": arg_agent, "input": "q; rm -rf /"})
    assert json.loads(result["output"]) == ["fixed", "ROLE\n\nq; rm -rf /"]
    none_agent = await create(host, **process_config("n", "cat; echo done", input="none"))
    result = await host.request("agent/run", {"agentId": none_agent, "input": "ignored"})
    assert result["output"] == "done\n"


async def test_exit_codes_signals_and_missing_commands_fail_cleanly(host: HostClient) -> None:
    failing = await create(
        host,
        **process_config("f", 'echo "bad thing: $MY_API_TOKEN" >&2; exit 3'),
    )
    await host.request("agent/dispose", {"agentId": failing})
    failing = await create(
        host,
        name="f",
        backend={
            "kind": "process",
            "command": "sh",
            "args": ["-c", 'echo "bad thing: $MY_API_TOKEN" >&2; exit 3'],
            "env": {"MY_API_TOKEN": "hunter2-very-secret"},
        },
    )
    result = await host.request("agent/run", {"agentId": failing, "input": "x"})
    assert result["success"] is False and result["status"]["code"] == "error"
    assert "exited with code 3" in result["output"]
    assert "bad thing" in result["output"] and "hunter2-very-secret" not in json.dumps(result)
    assert result["errorInfo"]["kind"] == "process"
    killed = await create(host, **process_config("k", "kill -9 $$"))
    result = await host.request("agent/run", {"agentId": killed, "input": "x"})
    assert "SIGKILL" in result["output"]
    missing = await create(host, name="m", backend={"kind": "process", "command": "/no/such/tool"})
    result = await host.request("agent/run", {"agentId": missing, "input": "x"})
    assert result["success"] is False and "/no/such/tool" in result["output"]
    empty = await create(host, name="e", backend={"kind": "process", "command": "cat"})
    result = await host.request("agent/run", {"agentId": empty, "input": "   "})
    assert result["success"] is False and "empty" in result["output"]
    # The host is still serving.
    assert (await host.request("agent/state", {"agentId": empty}))["status"] == "error"


async def test_a_fresh_process_per_run_and_history_never_seeds_it(host: HostClient) -> None:
    agent = await create(
        host,
        **process_config("fresh", 'echo "pid $$"; cat'),
        history=[{"role": "user", "content": [{"type": "text", "text": "SECRET HISTORY"}]}],
    )
    first = await host.request("agent/prompt", {"agentId": agent, "input": "one"})
    second = await host.request("agent/prompt", {"agentId": agent, "input": "two"})
    assert first["output"].splitlines()[0] != second["output"].splitlines()[0]
    assert "SECRET HISTORY" not in first["output"] + second["output"]
    assert second["output"].endswith("two")


async def test_structured_prompt_to_external_agent_leaves_history(host: HostClient) -> None:
    agent = await create(host, name="c", backend={"kind": "process", "command": "cat"})
    await host.request("agent/prompt", {"agentId": agent, "input": "hi"})
    before = await host.request("agent/history", {"agentId": agent})
    await expect_error(
        host.request("agent/prompt", {"agentId": agent, "input": [{"type": "text", "text": "x"}]}),
        -32602,
        "InvalidMessageError",
    )
    assert await host.request("agent/history", {"agentId": agent}) == before


async def test_a_background_child_holding_stdout_does_not_hold_the_run(
    host: HostClient, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    agent = await create(
        host, **process_config("bg", f"sleep 1000 & echo $! > {pidfile}; echo hi", input="none")
    )
    # Without its own exit wait the run would last as long as the sleep.
    result = await asyncio.wait_for(host.request("agent/run", {"agentId": agent, "input": "x"}), 15)
    assert result["success"] is True and result["output"] == "hi\n"
    assert wait_dead(int(pidfile.read_text())), "the background child outlived its run"
