"""A state directory made by real runs of a real ``oma-host`` (the provider
simulator answering), for the tests of ``oma-host runs`` and its viewer:
a prompt turn with two tool calls, a failed run, a cancelled one, a
delegation, a compaction, two team runs (a chain, a diamond), an evaluated
one-off run, a run whose agent name and tool input are markup, and two
turns of one session on a host that records their text (content capture
on, no export). Made
once per test session (``recorded`` in conftest.py); and running the
``oma-host runs`` command on it in a process of its own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.script import Fault, Reply
from oma_host.testing.simulator import Simulator, too_long_fault
from tests.builders import assistant, reply, text, tool_use, user
from tests.llm.compaction_helpers import summaries
from tests.providers.helpers import llm_config

KEY = "sk-ant-api03-runs-test-key-DO-NOT-LEAK-31"
PROMPT = "What do the notes say? PROMPT-MARKER-7f3a"
FILE_TEXT = "FILE-CONTENT-MARKER-41 the answer is 42\n"
WORDS = "the quick brown fox jumps over the lazy dog " * 6
ECHO = 'printf "done: "; cat'
FAIL = "echo BUILD-BROKE-MARKER >&2; exit 3"
# The captured session's turns (their text is recorded: content capture is on there).
CAPTURED_PROMPT = "Which port does the build use? CAPTURED-PROMPT-5c"
CAPTURED_FILE = f"The build listens on port 8080.\nDeploy key: {KEY}\n"
CAPTURED_REPLY = "The build uses port 8080. CAPTURED-REPLY-5c"
CAPTURED_SECOND = "And which protocol?"
CAPTURED_SECOND_REPLY = "Plain HTTP."
# Markup where the viewer shows data: it must show these as text, never run them.
MARKUP_AGENT = '<img src=x onerror="window.__pwned = 1">markup-agent'
MARKUP_INPUT = '<script>window.__pwned = 2</script><img src=x onerror="window.__pwned = 3">'
# The diamond team run's tasks and what each waits for.
DIAMOND = {"plan": [], "left": ["plan"], "right": ["plan"], "join": ["left", "right"]}


def _tool_use(call_id: str, path: str) -> dict[str, Any]:
    return tool_use(call_id, "file_read", path=path)


def _history(turns: int) -> list[dict[str, Any]]:
    return [
        message
        for number in range(turns)
        for message in (
            user(text(f"question {number}: {WORDS}")),
            assistant(text(f"answer {number}: {WORDS}")),
        )
    ]


async def _create(host: HostClient, config: dict[str, Any], session: str | None = None) -> str:
    params: dict[str, Any] = {"config": config}
    if session is not None:
        params["sessionId"] = session
    agent_id: str = (await host.request("agent/create", params))["agentId"]
    return agent_id


async def make_runs(state: Path, work: Path, sim: Simulator) -> dict[str, str]:
    """Run everything the tests read; the run ids by what they were."""
    evaluation = {
        "sample": 1,
        "storePayloads": "redacted",
        "scorers": [{"kind": "contains", "text": "messages"}],
    }
    host = await HostClient.spawn(
        host_argv("--state-dir", str(state)), env={"ANTHROPIC_API_KEY": KEY}
    )
    await host.initialize({"evaluation": evaluation})
    runs: dict[str, str] = {}
    try:
        # Two tool calls in one turn of a stored session.
        (work / "notes.txt").write_text(FILE_TEXT)
        (work / "more.txt").write_text("more")
        coder = await _create(
            host,
            llm_config(sim, "anthropic", name="coder", tools=["file_read"], cwd=str(work)),
            session="sess-1",
        )
        sim.script(
            reply(_tool_use("call_1", "notes.txt"), _tool_use("call_2", "more.txt")),
            Reply.text("It says 42."),
        )
        result = await host.request("agent/prompt", {"agentId": coder, "input": PROMPT})
        assert result["success"], result
        runs["tools"] = result["identity"]["runId"]

        # A run the provider refuses.
        failing = await _create(host, llm_config(sim, "anthropic", name="failing"))
        sim.script(Fault(401, "invalid x-api-key"))
        result = await host.request("agent/run", {"agentId": failing, "input": "hi"})
        assert not result["success"] and result["errorInfo"]["kind"] == "auth", result
        runs["failed"] = result["identity"]["runId"]

        # A run cancelled while it waits for the provider.
        slow = await _create(host, llm_config(sim, "anthropic", name="slow"))
        sim.script(Reply.text("too late", first_byte_delay_s=30))
        waiting = len(sim.requests)
        msg_id, answer = host.start_request(
            "agent/run", {"agentId": slow, "input": "wait", "runId": "run-cancelled"}
        )
        for _ in range(400):
            if len(sim.requests) > waiting:
                break
            await asyncio.sleep(0.025)
        host.cancel(msg_id)
        answered = await asyncio.wait_for(answer, 30)
        assert answered["error"]["code"] == -32800, answered
        runs["cancelled"] = "run-cancelled"

        # A delegation to a process agent.
        echo = {
            "name": "helper",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", ECHO]},
        }
        await _create(host, echo)
        lead_config = llm_config(
            sim,
            "anthropic",
            name="lead",
            delegates=["helper"],
            permissions=[{"tool": "delegate", "action": "allow"}],
        )
        lead = await _create(host, lead_config)
        call = {"agent": "helper", "task": "say hi"}
        sim.script(
            reply(tool_use("d1", "delegate", call)),
            Reply.text("delegated"),
        )
        result = await host.request("agent/run", {"agentId": lead, "input": "hand it on"})
        assert result["success"], result
        runs["delegation"] = result["identity"]["runId"]

        # A compaction after the provider says the conversation is too long.
        summaries(sim)
        compactor = await _create(
            host, llm_config(sim, "anthropic", name="compactor", history=_history(3))
        )
        sim.script(too_long_fault("anthropic"), Reply.text("answered at last"))
        result = await host.request("agent/prompt", {"agentId": compactor, "input": "one more"})
        assert result["success"], result
        runs["compaction"] = result["identity"]["runId"]
        sim.responder = None

        # A team run of process agents: b waits for a.
        worker = {
            "name": "echoer",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", ECHO]},
        }
        tasks = [
            {"id": "a", "title": "A", "description": "first", "assignee": "echoer"},
            {"id": "b", "title": "B", "description": "second", "dependsOn": ["a"]},
        ]
        params = {"team": {"agents": [worker]}, "tasks": tasks, "runId": "team-1"}
        result = await host.request("oma/runTasks", params)
        assert result["success"], result
        runs["team"] = "team-1"

        # A team run whose tasks make a diamond: plan, then left and right, then join.
        diamond = [
            {
                "id": task,
                "title": task,
                "description": task,
                "assignee": "echoer",
                "dependsOn": deps,
            }
            for task, deps in DIAMOND.items()
        ]
        params = {"team": {"agents": [worker]}, "tasks": diamond, "runId": "team-diamond"}
        result = await host.request("oma/runTasks", params)
        assert result["success"], result
        runs["diamond"] = "team-diamond"

        # A team run that fails: its first task's agent exits 3, so the second is skipped.
        failer = {
            "name": "failer",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", FAIL]},
        }
        tasks = [
            {"id": "build", "title": "Build", "description": "build it", "assignee": "failer"},
            {"id": "ship", "title": "Ship", "description": "ship it", "dependsOn": ["build"]},
        ]
        params = {"team": {"agents": [failer]}, "tasks": tasks, "runId": "team-failed"}
        result = await host.request("oma/runTasks", params)
        assert not result["success"], result
        runs["team_failed"] = "team-failed"

        # Markup in an agent's name and in a tool call's input (a file that does not exist).
        markup = await _create(
            host,
            llm_config(sim, "anthropic", name=MARKUP_AGENT, tools=["file_read"], cwd=str(work)),
        )
        sim.script(reply(_tool_use("call_m", MARKUP_INPUT)), Reply.text("no such file"))
        result = await host.request("agent/run", {"agentId": markup, "input": "read it"})
        assert result["success"], result
        runs["markup"] = result["identity"]["runId"]

        # A one-off run, evaluated.
        config = {"name": "pinger", "provider": "test", "model": "echo"}
        result = await host.request("oma/runAgent", {"config": config, "input": "PONG"})
        runs["evaluated"] = result["identity"]["runId"]
        flushed = await host.request("oma/evaluation/flush", {"timeoutMs": 20000})
        assert flushed["settled"], flushed
    finally:
        assert await host.close() == 0
    await _captured_runs(state, work, sim, runs)
    return runs


async def _captured_runs(state: Path, work: Path, sim: Simulator, runs: dict[str, str]) -> None:
    """Two turns of one session on a host that records message text with no
    export (``telemetry: {export: false, captureContent: true}``): a prompt,
    a tool call whose result holds the key (redacted), a reply; then a
    second prompt answered at once."""
    host = await HostClient.spawn(
        host_argv("--state-dir", str(state)), env={"ANTHROPIC_API_KEY": KEY}
    )
    await host.initialize({"telemetry": {"export": False, "captureContent": True}})
    try:
        (work / "build.txt").write_text(CAPTURED_FILE)
        scribe = await _create(
            host,
            llm_config(sim, "anthropic", name="scribe", tools=["file_read"], cwd=str(work)),
            session="sess-captured",
        )
        sim.script(
            reply(_tool_use("call_c", "build.txt")),
            Reply.text(CAPTURED_REPLY),
            Reply.text(CAPTURED_SECOND_REPLY),
        )
        for prompt, name in ((CAPTURED_PROMPT, "captured"), (CAPTURED_SECOND, "captured_2")):
            result = await host.request("agent/prompt", {"agentId": scribe, "input": prompt})
            assert result["success"], result
            runs[name] = result["identity"]["runId"]
    finally:
        assert await host.close() == 0


def oma_runs(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``oma-host runs ARGS`` on ``state``, in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "oma_host", "runs", "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def show_json(state: Path, run_id: str) -> dict[str, Any]:
    done = oma_runs(state, "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def flatten(nodes: list[dict[str, Any]], depth: int = 0) -> list[tuple[int, dict[str, Any]]]:
    found: list[tuple[int, dict[str, Any]]] = []
    for node in nodes:
        found.append((depth, node))
        found += flatten(node["children"], depth + 1)
    return found
