"""Agent-core edge cases: cancellation racing the turn queue, a reset while a
turn runs, and team configs refused before any task starts."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from oma_host import AbortSignal, Agent
from oma_host.core.config import parse_agent_config
from oma_host.core.errors import InvalidParamsError
from oma_host.orchestration.team_specs import Team, check_members
from oma_host.orchestration.teams import check_coordinator
from tests.server.helpers import wait_dead_async

SLOW = {"name": "slow", "provider": "test", "model": "slow-echo"}


async def test_cancelled_queued_prompts_never_leave_the_turn_lock_held() -> None:
    agent = Agent(SLOW)
    first = asyncio.ensure_future(agent.prompt("one"))
    await asyncio.sleep(0.01)
    for delay in (0.0, 0.001, 0.01):
        queued = asyncio.ensure_future(agent.prompt("queued"))
        await asyncio.sleep(delay)
        queued.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await queued
    await first
    # The lock is free: a later prompt completes.
    result = await asyncio.wait_for(agent.prompt("two"), 10)
    assert result["success"] is True


async def test_aborting_a_queued_prompt_returns_cancelled_and_keeps_the_queue_moving() -> None:
    agent = Agent(SLOW)
    first = asyncio.ensure_future(agent.prompt("one"))
    abort = AbortSignal()
    queued = asyncio.ensure_future(agent.prompt("queued", abort=abort))
    await asyncio.sleep(0.01)
    abort.abort()
    assert (await queued)["status"]["code"] == "cancelled"
    assert (await first)["success"] is True
    assert (await asyncio.wait_for(agent.prompt("two"), 10))["success"] is True
    users = [m["content"][0]["text"] for m in agent.get_history() if m["role"] == "user"]
    assert users == ["one", "two"]


async def test_a_turn_running_during_reset_is_not_kept() -> None:
    agent = Agent(SLOW)
    await agent.prompt("before")
    running = asyncio.ensure_future(agent.prompt("during"))
    await asyncio.sleep(0.05)
    agent.reset()
    result = await running
    assert result["success"] is True
    assert agent.get_history() == []


async def test_cancelling_the_caller_during_cleanup_is_not_swallowed(tmp_path: Path) -> None:
    # The process ignores SIGTERM, so after the abort the bridge spends about
    # a second ending it; the caller's own cancel arrives inside that second.
    # The cancellation goes on, and the group is killed all the same (it
    # used to live on: the SIGKILL after the grace was never sent).
    pids = tmp_path / "pids"
    stubborn = f"trap '' TERM; sleep 30 & echo $$ $! > {pids}; wait"
    agent = Agent(
        {"name": "p", "backend": {"kind": "process", "command": "sh", "args": ["-c", stubborn]}}
    )
    abort = AbortSignal()
    task = asyncio.ensure_future(agent.run("x", abort=abort))
    await asyncio.sleep(0.3)
    abort.abort()
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for pid in map(int, pids.read_text().split()):
        assert await wait_dead_async(pid, 5.0), f"process {pid} outlived the cancelled run"


def test_team_members_are_checked_before_anything_runs() -> None:
    members = [
        parse_agent_config({"name": "ok", "provider": "test", "model": "echo"}),
        parse_agent_config({"name": "bad", "provider": "nope", "model": "m"}),
    ]
    with pytest.raises(InvalidParamsError, match=r"team\.agents\[1\].*'nope'"):
        check_members(members)


def test_a_coordinator_must_be_llm_backed() -> None:
    process = {"kind": "process", "command": "cat"}
    team = Team(
        agents=check_members([parse_agent_config({"name": "p", "backend": process})]),
        coordinator=parse_agent_config({"name": "c", "backend": process}),
    )
    with pytest.raises(InvalidParamsError, match="LLM-backed"):
        check_coordinator(team)
