"""The tool permission policy: its rules and defaults as a table, then
``ask`` answered each way by a real client of a real ``oma-host`` over
stdio (allow once, always this session, deny, no answer in
``hooks.timeoutMs``), and no client at all (a team) denying. Each decision
is a ``permission`` stream event."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.core.config import PermissionRule
from oma_host.core.tools import builtin_tool
from oma_host.llm.permissions import evaluate, target_of, undeclared_tool
from oma_host.testing.simulator import Reply, Simulator
from tests.providers.helpers import llm_config, results_sent

KEY = "sk-ant-api03-permission-test-key-DO-NOT-LEAK-99"

RULES = [
    PermissionRule(tool="file_read", pattern="secrets/*", action="deny"),
    PermissionRule(tool="file_edit", pattern="src/*.py", action="allow"),
    PermissionRule(tool="fs__*", pattern="/tmp/*", action="allow"),
    PermissionRule(tool="fs__write_file", action="deny"),
    PermissionRule(tool="grep", action="ask"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "is_mcp", "action", "rule"),
    [
        ("file_read", {"path": "secrets/key.txt"}, False, "deny", 0),
        ("file_read", {"path": "src/a.py"}, False, "allow", None),  # default: read tools allow
        ("glob", {"pattern": "**/*.py"}, False, "allow", None),
        ("grep", {"pattern": "x"}, False, "ask", 4),
        ("file_edit", {"path": "src/a.py", "old": "a", "new": "b"}, False, "allow", 1),
        ("file_edit", {"path": "docs/a.md", "old": "a", "new": "b"}, False, "ask", None),
        ("file_write", {"path": "src/a.py", "content": ""}, False, "ask", None),
        ("fs__read_file", {"path": "/tmp/x"}, True, "allow", 2),
        ("fs__write_file", {"path": "/tmp/x"}, True, "allow", 2),  # first match wins
        ("fs__write_file", {"path": "/etc/x"}, True, "deny", 3),
        ("fs__list", {}, True, "ask", None),  # no target: a pattern rule cannot match
        ("git__status", {"command": "status"}, True, "ask", None),  # every MCP tool asks
    ],
)
def test_rules_first_match_wins_then_the_defaults(
    tool: str, arguments: dict[str, Any], is_mcp: bool, action: str, rule: int | None
) -> None:
    declaration = builtin_tool(tool)
    if is_mcp:  # declared as oma_host.llm.mcp_servers declares a server's tool
        assert declaration is None
        declaration = undeclared_tool(tool, "", {})
    assert declaration is not None
    verdict = evaluate(RULES, declaration, declaration.target(arguments))
    assert (verdict.action, verdict.rule) == (action, rule)


def test_the_main_argument_is_the_path_or_the_command() -> None:
    assert target_of({"command": "ls", "cwd": "/"}) == "ls"
    assert target_of({"path": "a", "command": "b"}) == "a"
    assert target_of({"count": 3}) is None
    assert target_of("not an object") is None


@pytest.fixture
async def host() -> AsyncIterator[HostClient]:
    client = await HostClient.spawn(env={"ANTHROPIC_API_KEY": KEY})
    await client.initialize()
    yield client
    await client.close()


def write(call_id: str, path: str) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "file_write",
        "input": {"path": path, "content": f"{call_id}\n"},
    }


async def create(host: HostClient, sim: Simulator, cwd: Path, **extra: Any) -> str:
    config = llm_config(sim, "anthropic", tools=["file_write"], cwd=str(cwd), **extra)
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


async def run(host: HostClient, agent: str, token: str) -> dict[str, Any]:
    params = {"agentId": agent, "input": "go", "partialResultToken": token}
    result: dict[str, Any] = await host.request("agent/stream", params)
    return result


def permission_events(host: HostClient, token: str) -> list[dict[str, Any]]:
    return [event["data"] for event in host.progress(token) if event["type"] == "permission"]


def asked(host: HostClient) -> list[dict[str, Any]]:
    return [
        params for method, params in host.server_requests if method == "agent/requestPermission"
    ]


async def test_allow_once_asks_every_time(host: HostClient, sim: Simulator, tmp_path: Path) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True, "scope": "once"}
    agent = await create(host, sim, tmp_path)
    sim.script(Reply(content=[write("a", "a.txt"), write("b", "b.txt")]), Reply.text("done"))
    result = await run(host, agent, "once")
    assert result["success"] is True
    first, second = asked(host)
    assert first == {
        "agentName": "anthropic-agent",
        "runId": result["identity"]["runId"],
        "title": "file_write a.txt",
        "kind": "edit",
        "optionKinds": ["allow_once", "allow_always", "reject_once"],
        "source": "tool",
        "tool": {
            "name": "file_write",
            "input": {"path": "a.txt", "content": "a\n"},
            "target": "a.txt",
        },
    }
    assert second["tool"]["target"] == "b.txt"
    assert (tmp_path / "a.txt").read_text() == "a\n" and (tmp_path / "b.txt").exists()
    events = permission_events(host, "once")
    assert [(e["tool"], e["action"], e["decision"], e["by"], e["scope"]) for e in events] == [
        ("file_write", "ask", "allow", "client", "once"),
        ("file_write", "ask", "allow", "client", "once"),
    ]
    assert events[0]["toolUseId"] == "a" and events[0]["target"] == "a.txt"


async def test_always_this_session_is_not_asked_again(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True, "scope": "session"}
    agent = await create(host, sim, tmp_path)
    sim.script(
        Reply(content=[write("a", "a.txt"), write("b", "b.txt")]),
        Reply.text("first"),
        Reply(content=[write("c", "c.txt")]),
        Reply.text("second"),
    )
    await run(host, agent, "s1")
    await run(host, agent, "s2")
    assert len(asked(host)) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "c.txt"]
    by = [e["by"] for e in permission_events(host, "s1") + permission_events(host, "s2")]
    assert by == ["client", "session", "session"]
    # A reset ends the session's grants: the next run asks again.
    await host.request("agent/reset", {"agentId": agent})
    sim.script(Reply(content=[write("d", "d.txt")]), Reply.text("third"))
    await run(host, agent, "s3")
    assert len(asked(host)) == 2


async def test_deny_is_an_error_result_and_writes_nothing(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    agent = await create(host, sim, tmp_path)
    sim.script(Reply(content=[write("a", "a.txt")]), Reply.text("ok"))
    result = await run(host, agent, "deny")
    assert result["success"] is True
    (denied,) = results_sent(sim, 1)
    assert denied["is_error"] is True
    assert denied["content"] == "file_write: permission denied (the user said no)"
    assert list(tmp_path.iterdir()) == []
    (event,) = permission_events(host, "deny")
    assert (event["decision"], event["by"]) == ("deny", "client")


async def test_no_answer_within_the_hooks_timeout_denies(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    async def never(params: Any) -> Any:
        await asyncio.sleep(30)
        return {"approve": True}

    host.handlers["agent/requestPermission"] = never
    agent = await create(host, sim, tmp_path, hooks={"timeoutMs": 300})
    sim.script(Reply(content=[write("a", "a.txt")]), Reply.text("ok"))
    await run(host, agent, "late")
    (denied,) = results_sent(sim, 1)
    assert denied["content"] == "file_write: permission denied (the client did not answer in time)"
    assert list(tmp_path.iterdir()) == []
    (event,) = permission_events(host, "late")
    assert (event["decision"], event["by"]) == ("deny", "timeout")


async def test_a_malformed_answer_or_an_error_denies(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    answers = iter([{"approve": "yes"}, RuntimeError("no dialog here")])

    def answer(params: Any) -> Any:
        item = next(answers)
        if isinstance(item, Exception):
            raise item
        return item

    host.handlers["agent/requestPermission"] = answer
    agent = await create(host, sim, tmp_path)
    sim.script(Reply(content=[write("a", "a.txt"), write("b", "b.txt")]), Reply.text("ok"))
    await run(host, agent, "bad")
    assert [e["by"] for e in permission_events(host, "bad")] == ["bad_answer", "client_error"]
    assert list(tmp_path.iterdir()) == []


async def test_rules_allow_and_deny_without_asking(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    rules = [
        {"tool": "file_write", "pattern": "*.md", "action": "allow"},
        {"tool": "file_*", "action": "deny"},
    ]
    agent = await create(host, sim, tmp_path, permissions=rules)
    sim.script(Reply(content=[write("a", "a.md"), write("b", "b.txt")]), Reply.text("ok"))
    await run(host, agent, "rules")
    assert asked(host) == []
    allowed, denied = results_sent(sim, 1)
    assert "is_error" not in allowed
    assert denied["content"] == "file_write: permission denied (by permissions[1])"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md"]
    events = permission_events(host, "rules")
    assert [(e["decision"], e["by"], e["rule"]) for e in events] == [
        ("allow", "rule", 0),
        ("deny", "rule", 1),
    ]


async def test_a_team_has_no_client_to_ask_so_ask_denies(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": True}
    agent = llm_config(sim, "anthropic", name="writer", tools=["file_write"], cwd=str(tmp_path))
    sim.script(Reply(content=[write("a", "a.txt")]), Reply.text("ok"))
    tasks = [{"id": "t", "title": "Write", "description": "write a.txt", "assignee": "writer"}]
    result = await host.request("oma/runTasks", {"team": {"agents": [agent]}, "tasks": tasks})
    assert result["success"] is True, result
    assert asked(host) == []
    (denied,) = results_sent(sim, 1)
    assert denied["content"] == (
        "file_write: permission denied (the policy asks and there is no client to ask)"
    )
    assert list(tmp_path.iterdir()) == []
