"""The ``shell`` tool's permission rules through a real ``oma-host`` over
stdio whose model (the provider simulator) calls the tool as a
prompt-injected model would: lines that a naive reading of quotes and ``$``
let past ``allow`` rules are asked about and never run, and ``rm`` spelled
every way that once got past ``deny rm*`` is denied, or asked about where
the line cannot say what it runs (issue 39)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.llm.test_shell_tool import create, sent, shell, stream


def decided(host: HostClient, token: str) -> dict[str, dict[str, Any]]:
    """The ``permission`` events of a turn, by tool call."""
    return {
        event["data"]["toolUseId"]: event["data"]
        for event in host.progress(token)
        if event["type"] == "permission"
    }


def asked(host: HostClient) -> list[str]:
    return [
        params["tool"]["target"]
        for method, params in host.server_requests
        if method == "agent/requestPermission"
    ]


async def test_lines_that_hide_a_command_from_the_reader_are_asked_not_run(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    rules = [
        {"tool": "shell", "pattern": "rm*", "action": "deny"},
        {"tool": "shell", "pattern": "git status*", "action": "allow"},
        {"tool": "shell", "pattern": "ls*", "action": "allow"},
    ]
    agent = await create(host, sim, tmp_path, permissions=rules)
    probes = [
        # Inside a double-quoted ${...}, sh takes ' as a plain character.
        'git status "${x-\'}"; touch M; echo "\'}"',
        # $$ is the process id; the { after it is plain, so ; ends the command.
        "ls $${x-; touch M; echo }",
        "ls $#{x-; touch M; echo }",
        "ls -la $?{x:-a;touch M;echo}",
        "git status $1{; touch M; echo }",
    ]
    calls = [shell("ls", "ls -la"), shell("git", "git status 2>&1")]
    calls += [shell(f"probe{index}", line) for index, line in enumerate(probes)]
    sim.script(Reply(content=calls), Reply.text("done"))
    await stream(host, agent, "t")
    events = decided(host, "t")
    for allowed in ("ls", "git"):
        assert (events[allowed]["decision"], events[allowed]["by"]) == ("allow", "rule")
    for index, line in enumerate(probes):
        event = events[f"probe{index}"]
        assert (event["action"], event["decision"], event["by"]) == ("ask", "deny", "client"), line
    assert asked(host) == probes
    assert not (tmp_path / "M").exists()
    results = sent(sim)
    assert results["probe0"]["content"] == "shell: permission denied (the user said no)"
    assert "[exit code 0]" in results["ls"]["content"]  # the allowed ones ran


async def test_rm_past_a_deny_rule_is_denied_however_it_is_spelled(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    host.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    (tmp_path / "victim").write_text("keep me\n")
    rules = [
        {"tool": "shell", "pattern": "rm*", "action": "deny"},
        {"tool": "shell", "action": "allow"},  # everything else runs unasked
    ]
    agent = await create(host, sim, tmp_path, permissions=rules)
    spelled = [
        "\\rm victim",
        "'rm' victim",
        'r""m victim',
        "command rm victim",
        "env -i LC_ALL=C rm victim",
        "/bin/rm victim",
        "ls | xargs rm",
        "find . -name victim -exec rm {} \\;",
        "exec rm victim",
        "eval 'rm victim'",
        "sh -c 'rm victim'",
        "echo `echo \\`rm victim\\``",
        "timeout 5 nice rm victim",
    ]
    # What runs is decided when it runs: asked about, never allowed unasked.
    unknowable = ["x=rm; $x victim", 'c="rm victim"; eval "$c"', "echo rm victim | sh"]
    calls = [shell(f"rm{index}", line) for index, line in enumerate(spelled)]
    calls += [shell(f"unknown{index}", line) for index, line in enumerate(unknowable)]
    calls.append(shell("fine", "cat victim"))
    sim.script(Reply(content=calls), Reply.text("done"))
    await stream(host, agent, "t")
    events = decided(host, "t")
    for index, line in enumerate(spelled):
        event = events[f"rm{index}"]
        assert (event["action"], event["decision"], event["by"], event["rule"]) == (
            "deny",
            "deny",
            "rule",
            0,
        ), line
    for index, line in enumerate(unknowable):
        event = events[f"unknown{index}"]
        assert (event["action"], event["decision"], event["rule"]) == ("ask", "deny", 0), line
    assert asked(host) == unknowable
    assert (events["fine"]["decision"], events["fine"]["rule"]) == ("allow", 1)
    assert (tmp_path / "victim").read_text() == "keep me\n"
    assert sent(sim)["fine"]["content"] == "keep me\n[exit code 0]"
