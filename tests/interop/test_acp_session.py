"""The ACP bridge's session features against the TypeScript-SDK agent
(``acp_agent/agent.mjs``) through real hosts: a session resumed by a second
host, a login with ``authenticate``, models and modes read and changed, and
the files the agent reads (and, when allowed, writes) through oma-host."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from oma_host.server.app import SessionOptions
from tests.interop.helpers import AcpConfig
from tests.server.helpers import InProcessHost, create, expect_error

_tokens = itertools.count()


async def run(host: HostClient, agent: str, text: str, method: str = "agent/run") -> dict[str, Any]:
    result: dict[str, Any] = await host.request(
        method, {"agentId": agent, "input": text}, timeout=60
    )
    return result


async def streamed(host: HostClient, agent: str, text: str) -> tuple[dict[str, Any], list[Any]]:
    """An ``agent/stream`` run's result and the events it streamed."""
    token = f"tok-{next(_tokens)}"
    result = await host.request(
        "agent/stream",
        {"agentId": agent, "input": text, "partialResultToken": token},
        timeout=60,
    )
    return result, host.progress(token)


@asynccontextmanager
async def state_host(state: Path) -> AsyncIterator[HostClient]:
    """A host keeping its sessions in ``state``, served in the test's process
    (the bridge's sessions, not the process, are the subject)."""
    client = await InProcessHost.serve(SessionOptions(framing="auto", state_dir=str(state)))
    try:
        await client.initialize()
        yield client
    finally:
        await client.close()


async def test_a_second_host_resumes_the_session_with_its_history(
    acp: AcpConfig, tmp_path: Path
) -> None:
    agent_state = tmp_path / "agent-sessions"
    agent_state.mkdir()
    config = acp(env={"ACP_AGENT_STATE_DIR": str(agent_state)})
    async with state_host(tmp_path / "state") as first:
        agent = (await first.request("agent/create", {"config": config, "sessionId": "s1"}))[
            "agentId"
        ]
        assert (await run(first, agent, "the sky is green", "agent/prompt"))["success"]
        assert (await run(first, agent, "[history]", "agent/prompt"))[
            "output"
        ] == "history: the sky is green"
    stored = sorted(path.name for path in agent_state.iterdir())
    assert len(stored) == 1, stored  # one ACP session, on the agent's side

    async with state_host(tmp_path / "state") as second:
        agent = (await second.request("agent/create", {"config": config, "sessionId": "s1"}))[
            "agentId"
        ]
        history = await second.request("agent/history", {"agentId": agent})
        assert len(history["messages"]) == 4  # the host's own record of both turns
        result, events = await streamed(second, agent, "[history]")
        # The agent loaded the stored session: it remembers both earlier prompts.
        assert result["output"] == "history: the sky is green | [history]", result
        # What it replayed while loading is no run's output, nor any event of it.
        shown = json.dumps(events)
        assert "replayed:" not in shown and "session_restarted" not in shown, events
    assert sorted(path.name for path in agent_state.iterdir()) == stored  # no new session


async def test_an_agent_that_cannot_resume_restarts_the_session_and_says_so(
    acp: AcpConfig, tmp_path: Path
) -> None:
    config = acp()  # advertises neither loadSession nor resume
    async with state_host(tmp_path / "state") as first:
        agent = (await first.request("agent/create", {"config": config, "sessionId": "s2"}))[
            "agentId"
        ]
        assert (await run(first, agent, "remember me", "agent/prompt"))["success"]
    async with state_host(tmp_path / "state") as second:
        agent = (await second.request("agent/create", {"config": config, "sessionId": "s2"}))[
            "agentId"
        ]
        result, events = await streamed(second, agent, "[history]")
        assert result["success"] is True
        restarted = [e for e in events if e.get("type") == "session_restarted"]
        assert len(restarted) == 1, events
        data = restarted[0]["data"]
        assert data["previous"] == "sess-1" and data["sessionId"] == "sess-1"
        assert "neither session/resume nor session/load" in data["reason"]
        # Reported once: the next run is quiet.
        _, later = await streamed(second, agent, "again")
        assert not [e for e in later if e.get("type") == "session_restarted"]


async def test_authenticate_then_session_new(host: HostClient, acp: AcpConfig) -> None:
    # The env_var method is the only one whose variable is set: it is chosen.
    agent = await create(
        host, **acp(env={"ACP_AGENT_LOGIN_VAR": "INTEROP_LOGIN_VAR", "INTEROP_LOGIN_VAR": "t0k"})
    )
    result, events = await streamed(host, agent, "[authed]")
    assert result["output"] == "authenticated: api-key", result
    assert {"type": "authenticated", "data": {"methodId": "api-key"}} in [
        {"type": e.get("type"), "data": e.get("data")} for e in events
    ]
    # backend.auth names the method outright.
    config = acp(env={"ACP_AGENT_LOGIN_VAR": "INTEROP_LOGIN_VAR"})
    config["backend"]["auth"] = "agent-login"
    named = await create(host, **config)
    assert (await run(host, named, "[authed]"))["output"] == "authenticated: agent-login"


async def test_without_a_usable_login_method_the_result_lists_what_each_needs(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"ACP_AGENT_LOGIN_VAR": "INTEROP_UNSET_VAR"}))
    result = await run(host, agent, "hello")
    assert result["success"] is False and result["errorInfo"]["kind"] == "auth", result
    message = result["status"]["message"]
    assert "refused session/new: authentication required" in message
    assert "agent-login (Agent login)" in message
    assert "api-key (API key: set INTEROP_UNSET_VAR)" in message
    # A method the agent does not offer, named in backend.auth, is refused by name.
    config = acp(env={"ACP_AGENT_LOGIN_VAR": "INTEROP_UNSET_VAR"})
    config["backend"]["auth"] = "magic"
    wrong = await create(host, **config)
    result = await run(host, wrong, "hello")
    assert result["errorInfo"]["kind"] == "auth"
    assert "backend.auth names 'magic'" in result["status"]["message"]


async def test_models_and_modes_are_shown_and_changed(host: HostClient, acp: AcpConfig) -> None:
    config = acp(env={"ACP_AGENT_CONFIG": "1"})
    config["backend"]["config"] = {"model": "large"}  # applied at session start
    agent = await create(host, **config)
    state = await host.request("agent/state", {"agentId": agent})
    assert "configOptions" not in state  # no live session yet
    assert (await run(host, agent, "[config]"))["output"] == "mode=ask model=large"
    state = await host.request("agent/state", {"agentId": agent})
    current = {o["id"]: o["currentValue"] for o in state["configOptions"]}
    assert current == {"mode": "ask", "model": "large"}
    assert state["modes"]["currentModeId"] == "ask"

    choices = await host.request(
        "agent/configure", {"agentId": agent, "configId": "mode", "value": "code"}
    )
    assert {o["id"]: o["currentValue"] for o in choices["configOptions"]}["mode"] == "code"
    assert (await run(host, agent, "[config]"))["output"] == "mode=code model=large"

    error = await expect_error(
        host.request("agent/configure", {"agentId": agent, "configId": "model", "value": "huge"}),
        -32602,
        "InvalidParams",
    )
    assert "the agent offers: small, large" in error.message
    error = await expect_error(
        host.request("agent/configure", {"agentId": agent, "configId": "tone", "value": "x"}),
        -32602,
        "InvalidParams",
    )
    assert "its options: mode, model" in error.message
    # The session survived the refusals.
    assert (await run(host, agent, "[config]"))["output"] == "mode=code model=large"


async def test_configure_opens_the_session_and_a_bad_start_choice_fails_the_run(
    host: HostClient, acp: AcpConfig
) -> None:
    agent = await create(host, **acp(env={"ACP_AGENT_CONFIG": "1"}))
    choices = await host.request(
        "agent/configure", {"agentId": agent, "configId": "model", "value": "large"}
    )
    assert {o["id"]: o["currentValue"] for o in choices["configOptions"]}["model"] == "large"
    assert (await run(host, agent, "[config]"))["output"] == "mode=ask model=large"

    config = acp(env={"ACP_AGENT_CONFIG": "1"})
    config["backend"]["config"] = {"mode": "yolo"}
    bad = await create(host, **config)
    result = await run(host, bad, "hello")
    assert result["success"] is False and result["errorInfo"]["kind"] == "config", result
    assert "backend.config.mode: 'yolo' is not a value of 'mode'" in result["status"]["message"]

    plain = await create(host, name="llm-agent", provider="anthropic", model="m")
    refused = await expect_error(
        host.request("agent/configure", {"agentId": plain, "configId": "mode", "value": "x"}),
        -32602,
        "InvalidParams",
    )
    assert "agent 'llm-agent' has an LLM backend, which has no options to set" in refused.message


async def test_the_agent_reads_files_inside_cwd_only(
    host: HostClient, acp: AcpConfig, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("first\nsecond\nthird\n")
    (tmp_path / "secret.txt").write_text("outside")
    (work / "link.txt").symlink_to(tmp_path / "secret.txt")
    config = acp()
    config["backend"]["cwd"] = str(work)
    agent = await create(host, **config)
    caps = json.loads((await run(host, agent, "[caps]"))["output"])
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": False}
    assert (await run(host, agent, f"[read:{work}/notes.txt]"))["output"] == (
        "read: first\nsecond\nthird\n"
    )
    assert (await run(host, agent, f"[read:{work}/notes.txt#2]"))["output"] == "read: second\n"
    for outside in (f"{tmp_path}/secret.txt", f"{work}/../secret.txt", f"{work}/link.txt"):
        assert (await run(host, agent, f"[read:{outside}]"))["output"] == "read: error -32602"
    assert (await run(host, agent, "[fs]"))["output"] == "fs: error -32602"  # /etc/hostname


async def test_writes_only_when_allowed_and_permitted(
    host: HostClient, acp: AcpConfig, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    config = acp()
    config["backend"]["cwd"] = str(work)
    off = await create(host, **config)
    assert (await run(host, off, f"[write:{work}/a.txt=hi]"))["output"] == "write: error -32601"
    assert not (work / "a.txt").exists()

    config["backend"]["allowWrites"] = True
    config["permissions"] = [
        {"tool": "file_write", "pattern": "*/docs/*", "action": "allow"},
        {"tool": "file_write", "action": "deny"},
    ]
    agent = await create(host, **config)
    caps = json.loads((await run(host, agent, "[caps]"))["output"])
    assert caps["fs"] == {"readTextFile": True, "writeTextFile": True}
    result, events = await streamed(host, agent, f"[write:{work}/docs/new.txt=hello]")
    assert result["output"] == "write: ok", result
    assert (work / "docs" / "new.txt").read_text() == "hello"
    decided = [e["data"] for e in events if e.get("type") == "permission"]
    assert decided and decided[0]["decision"] == "allow" and decided[0]["by"] == "rule"
    # Denied by the policy, and outside cwd: refused, nothing written.
    assert (await run(host, agent, f"[write:{work}/other.txt=x]"))["output"] == (
        "write: error -32603"
    )
    assert not (work / "other.txt").exists()
    assert (await run(host, agent, f"[write:{tmp_path}/docs/out.txt=x]"))["output"] == (
        "write: error -32602"
    )
    assert not (tmp_path / "docs").exists()


async def test_after_a_reset_the_new_acp_session_is_the_one_resumed(
    acp: AcpConfig, tmp_path: Path
) -> None:
    agent_state = tmp_path / "agent-sessions"
    agent_state.mkdir()
    config = acp(env={"ACP_AGENT_STATE_DIR": str(agent_state)})
    async with state_host(tmp_path / "state") as first:
        agent = (await first.request("agent/create", {"config": config, "sessionId": "s3"}))[
            "agentId"
        ]
        assert (await run(first, agent, "before the reset", "agent/prompt"))["success"]
        await first.request("agent/reset", {"agentId": agent})
        assert (await run(first, agent, "after the reset", "agent/prompt"))["success"]
    async with state_host(tmp_path / "state") as second:
        agent = (await second.request("agent/create", {"config": config, "sessionId": "s3"}))[
            "agentId"
        ]
        result, events = await streamed(second, agent, "[history]")
        assert result["output"] == "history: after the reset", result
        assert not [e for e in events if e.get("type") == "session_restarted"]
