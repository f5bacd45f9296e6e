"""The built-in tools under hostile input, through a real ``oma-host`` whose
model (the simulator) calls them: a backtracking grep pattern, a pattern RE2
cannot run, symlink loops in ``cwd``, and a run cancelled mid-grep, whose
worker must stop rather than grind on in the background."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import create_llm
from tests.server.helpers import wait_for_progress


def grep_call(call_id: str, pattern: str, path: str = ".") -> dict[str, Any]:
    return tool_use(call_id, "grep", pattern=pattern, path=path)


def tool_results(sim: Simulator) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = sim.requests[1].body["messages"][-1]["content"]
    return results


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def test_a_backtracking_pattern_is_answered_at_once_and_one_re2_lacks_is_an_error(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    # Python's re took 12 s per line on this, holding the GIL all along.
    (tmp_path / "a.txt").write_text(("a" * 28 + "!\n") * 3)
    agent = await create_llm(host, sim, "anthropic", tools=["grep"], cwd=str(tmp_path))
    sim.script(
        reply(grep_call("slow", "(a+)+$"), grep_call("look", "(?<=a)!")),
        Reply.text("done"),
    )
    started = time.monotonic()
    result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=30)
    assert time.monotonic() - started < 5
    assert result["success"] is True
    slow, look = tool_results(sim)
    assert slow == {"type": "tool_result", "tool_use_id": "slow", "content": "no matches"}
    assert look["is_error"] is True
    assert "grep: pattern is not one RE2 can run: invalid perl operator: (?<" in look["content"]
    assert "no backreferences or lookaround" in look["content"]


async def test_symlink_loops_in_cwd_leave_grep_and_glob_working(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("needle = 1\n")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "ping").symlink_to("pong")
    (tmp_path / "pong").symlink_to("ping")
    (tmp_path / "src" / "up").symlink_to("..")
    agent = await create_llm(host, sim, "anthropic", tools=["grep", "glob"], cwd=str(tmp_path))
    glob = tool_use("g", "glob", pattern="**/*.py")
    sim.script(reply(grep_call("n", "needle"), glob), Reply.text("done"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True
    assert [(r.get("is_error", False), r["content"]) for r in tool_results(sim)] == [
        (False, "src/main.py:1: needle = 1"),
        (False, "src/main.py"),
    ]


async def test_a_run_cancelled_mid_grep_stops_its_worker(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    # Many names for one 1 MB file of short lines: a grep of many seconds
    # that costs no disk.
    (tmp_path / "one.txt").write_text("just a line of text\n" * 50_000)
    for directory in range(20):
        (tmp_path / f"d{directory:02}").mkdir()
        for name in range(100):
            os.link(tmp_path / "one.txt", tmp_path / f"d{directory:02}" / f"f{name:03}.txt")
    agent = await create_llm(host, sim, "anthropic", tools=["grep"], cwd=str(tmp_path))
    sim.script(reply(grep_call("long", "never-there")), Reply.text("unreached"))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "p"}
    )
    await wait_for_progress(host, "p")  # the tool_use is out: the grep has begun
    await asyncio.sleep(0.5)
    host.cancel(msg_id)
    response = await asyncio.wait_for(pending, 5)
    assert response["error"]["code"] == -32800
    assert host.process is not None
    await asyncio.sleep(0.3)  # the worker's next check comes within milliseconds
    before = cpu_seconds(host.process.pid)
    await asyncio.sleep(1.0)
    assert cpu_seconds(host.process.pid) - before < 0.3  # nothing grinds on
    assert await host.request("agent/list", {})
