"""Work-done progress on runs that do not stream: ``agent/run``,
``agent/prompt`` and ``oma/runAgent`` with a ``workDoneToken`` report each
step of the run (the model waited for, the tool called, the turn) with the
time since the run started, between ``begin`` and ``end``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config

ELAPSED = r" \(\d+ s\)"


@pytest.mark.parametrize("method", ["agent/run", "agent/prompt", "oma/runAgent"])
async def test_a_run_reports_its_steps_while_it_waits(
    host: HostClient, sim: Simulator, tmp_path: Path, method: str
) -> None:
    (tmp_path / "notes.txt").write_text("the answer is 42\n")
    config = llm_config(sim, "anthropic", tools=["grep"], cwd=str(tmp_path))
    call = tool_use("call_1", "grep", pattern="answer")
    sim.script(reply(call), Reply.text("42"))
    params: dict[str, Any] = {"input": "what is the answer?", "workDoneToken": "wd"}
    if method == "oma/runAgent":
        params["config"] = config
    else:
        created = await host.request("agent/create", {"config": config})
        params["agentId"] = created["agentId"]
    result = await host.request(method, params)
    assert result["success"] is True, result
    values = host.progress("wd")
    assert values[0] == {"kind": "begin", "title": config["name"]}
    assert values[-1] == {"kind": "end", "message": "ok"}
    reports = [value["message"] for value in values[1:-1]]
    assert all(value["kind"] == "report" for value in values[1:-1])
    assert all(re.search(ELAPSED + "$", message) for message in reports), reports
    # A second's tick repeats the latest step ("running" before the first).
    steps = [re.sub(ELAPSED + "$", "", message) for message in reports]
    steps = [step for step in steps if step != "running"]
    assert list(dict.fromkeys(steps)) == [
        "waiting for sim-1",
        "calling tool grep",
        "turn 2 of 10: waiting for sim-1",
    ]


async def test_a_run_without_a_token_reports_nothing(host: HostClient, sim: Simulator) -> None:
    sim.script(Reply.text("hi"))
    result = await host.request(
        "oma/runAgent", {"config": llm_config(sim, "anthropic"), "input": "hello"}
    )
    assert result["success"] is True
    assert not [n for n in host.notifications if n.get("method") == "$/progress"]


async def test_a_long_wait_keeps_counting(host: HostClient, sim: Simulator) -> None:
    sim.script(Reply.text("late", first_byte_delay_s=2.5))
    config = llm_config(sim, "anthropic")
    params = {"config": config, "input": "hello", "workDoneToken": 7}
    assert (await host.request("oma/runAgent", params))["success"] is True
    reports = [value.get("message", "") for value in host.progress(7)]
    assert any(re.fullmatch(r"waiting for sim-1 \([1-9]\d* s\)", r) for r in reports), reports
