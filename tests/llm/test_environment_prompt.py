"""``environment: true``: the host's part of the system prompt, as the
provider simulator receives it, through a real ``oma-host`` over stdio and
through the Python API: where the agent works, git's branch and status, the
tools and the permission mode, then the user's and the project's instruction
files, bounded, read safely from an untrusted repository, once per session."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from oma_host import Agent
from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.providers.conftest import ANTHROPIC_KEY
from tests.providers.helpers import create_llm, llm_config, system_text


def _system(sim: Simulator, request: int = 0) -> str:
    return system_text("anthropic", sim.requests[request].body)


async def _prompt_of(sim: Simulator, cwd: Path, **config: Any) -> str:
    """The system prompt an agent of the Python API working in ``cwd`` sends."""
    agent = Agent(
        llm_config(sim, "anthropic", apiKey=ANTHROPIC_KEY, environment=True, cwd=str(cwd), **config)
    )
    sim.script(Reply.text("done"))
    try:
        result = await agent.run("go")
    finally:
        await agent.close()
    assert result["success"] is True, result
    return _system(sim, -1)


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        timeout=30,
    )


# -- through the JSON-RPC door ----------------------------------------------------


async def test_the_json_rpc_door_puts_the_environment_before_the_system_prompt(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Indent with tabs.\n")
    agent = await create_llm(
        host,
        sim,
        "anthropic",
        environment=True,
        cwd=str(tmp_path),
        systemPrompt="Answer in French.",
        toolPreset="readonly",
    )
    sim.script(Reply.text("un"), Reply.text("deux"))
    await host.request("agent/prompt", {"agentId": agent, "input": "one"})
    # Read when the session started: a change later is not seen, and the
    # system prompt stays the same request after request (prompt caching).
    (tmp_path / "AGENTS.md").write_text("Indent with spaces.\n")
    await host.request("agent/prompt", {"agentId": agent, "input": "two"})
    first, second = _system(sim, 0), _system(sim, 1)
    assert first == second
    assert f"Working directory: {tmp_path.resolve()}" in first
    assert "not in a git repository" in first
    assert "Your built-in tools: file_read, grep, glob." in first
    assert "Permission mode: ask." in first
    assert f"## {tmp_path.resolve() / 'AGENTS.md'}\n\nIndent with tabs." in first
    assert "spaces" not in first
    assert first.endswith("\n\nAnswer in French.")  # the agent's own, after the host's part


async def test_without_environment_the_system_prompt_is_the_agents_own(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "AGENTS.md").write_text("Indent with tabs.\n")
    agent = await create_llm(
        host, sim, "anthropic", cwd=str(tmp_path), systemPrompt="Answer in French."
    )
    sim.script(Reply.text("oui"))
    await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert _system(sim) == "Answer in French."


# -- what is gathered (the Python API) --------------------------------------------


async def test_a_git_repository_its_branch_status_and_instructions_root_to_cwd(
    sim: Simulator, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    cwd = repo / "pkg" / "mod"
    cwd.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "trunk")
    (repo / "tracked.txt").write_text("one\n")
    _git(repo, "add", "tracked.txt")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "tracked.txt").write_text("two\n")
    (repo / "new.txt").write_text("new\n")
    (repo / "AGENTS.md").write_text("Root rules.\n")
    (repo / "pkg" / "CLAUDE.md").write_text("Package rules (CLAUDE.md).\n")
    (cwd / "AGENTS.md").write_text("Module rules.\n")
    (cwd / "CLAUDE.md").write_text("Not read: AGENTS.md is there.\n")
    prompt = await _prompt_of(sim, cwd)
    assert f"in the repository at {repo.resolve()}" in prompt
    assert "Branch: trunk" in prompt
    assert "\n     M tracked.txt\n" in prompt
    assert "(4 changed paths, relative to the repository's root):" in prompt
    assert "\n    ?? new.txt\n" in prompt
    root = prompt.index("Root rules.")
    package = prompt.index("Package rules (CLAUDE.md).")
    module = prompt.index("Module rules.")
    assert root < package < module
    assert "Not read" not in prompt


async def test_a_repositorys_git_settings_run_no_command(sim: Simulator, tmp_path: Path) -> None:
    """A repository's own configuration can make ``git status`` run commands
    (a file system monitor, a filter driver); none of them runs here."""
    repo = tmp_path / "repo"
    repo.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text("*.txt filter=evil\n")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "-c", "filter.evil.clean=cat", "add", ".")
    _git(repo, "-c", "filter.evil.clean=cat", "commit", "-q", "-m", "first")
    _git(repo, "config", "core.fsmonitor", f"touch {marks / 'fsmonitor'}; false")
    _git(repo, "config", "filter.evil.clean", f"touch {marks / 'filter'}; cat")
    _git(repo, "config", "filter.evil.required", "true")
    (repo / "a.txt").write_text("two\n")  # changed after the index: git looks at it
    prompt = await _prompt_of(sim, repo)
    assert "Branch: main" in prompt
    assert "\n     M a.txt" in prompt
    assert list(marks.iterdir()) == []


async def test_without_git_the_prompt_says_the_status_was_not_read(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("Still read.\n")
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # git is run with the host's PATH: none here
    prompt = await _prompt_of(sim, tmp_path)
    assert f"in the repository at {tmp_path.resolve()}" in prompt
    assert "Its branch and status were not read: git could not be run" in prompt
    assert "Still read." in prompt


async def test_instruction_files_are_read_safely_from_an_untrusted_repository(
    sim: Simulator, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("SECRET FROM OUTSIDE\n")
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "docs" / "rules.md").write_text("Rules through an inner symlink.\n")
    (repo / "AGENTS.md").symlink_to(repo / "docs" / "rules.md")  # inside: followed
    fifo = repo / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "AGENTS.md")  # never waited on: CLAUDE.md is read instead
    (fifo / "CLAUDE.md").write_text("Beside a FIFO.\n")
    cwd = fifo / "out"
    cwd.mkdir()
    (cwd / "AGENTS.md").symlink_to(outside)  # out of the repository: not read
    (cwd / "CLAUDE.md").mkdir()  # a directory: not read
    prompt = await _prompt_of(sim, cwd)
    assert "Rules through an inner symlink." in prompt
    assert "Beside a FIFO." in prompt
    assert "SECRET FROM OUTSIDE" not in prompt
    assert str(cwd.resolve() / "AGENTS.md") not in prompt


async def test_instruction_files_are_bounded_and_the_cut_said(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config_home = tmp_path / "config"
    (config_home / "oma-host").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config_home))
    user_file = config_home / "oma-host" / "AGENTS.md"
    user_file.write_text("The user's own rule.\n")
    repo = tmp_path / "repo"
    cwd = repo / "deep"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    # 40 KiB of a two-byte character: cut at 32 KiB, on a character boundary.
    (repo / "AGENTS.md").write_text("é" * 20_480)
    (cwd / "AGENTS.md").write_text("z" * 40_000)
    prompt = await _prompt_of(sim, cwd)
    user = prompt.index("The user's own rule.")
    assert prompt.index(f"## {user_file}") < user < prompt.index(f"## {repo.resolve()}/AGENTS.md")
    assert "é" * 16_384 + "\n[... cut: the file has 40960 bytes, of which the first" in prompt
    assert "é" * 16_385 not in prompt
    # The user's 21 bytes and the root's 32768 leave 32747 for the last one.
    left = 64 * 1024 - 21 - 32_768
    assert "z" * left + f"\n[... cut: the file has 40000 bytes, of which the first {left} are" in (
        prompt
    )
    assert "z" * (left + 1) not in prompt


async def test_a_long_status_shows_twenty_paths_and_counts_the_rest(
    sim: Simulator, tmp_path: Path
) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    for number in range(25):
        (tmp_path / f"file{number:02}.txt").write_text("new\n")
    prompt = await _prompt_of(sim, tmp_path)
    assert "(25 changed paths, relative to the repository's root):" in prompt
    assert "\n    ?? file19.txt\n    ... and 5 more" in prompt
    assert "file20.txt" not in prompt


async def test_a_status_longer_than_is_read_says_there_is_more(
    sim: Simulator, tmp_path: Path
) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    for number in range(400):  # 400 lines of over 50 characters: past 16 KiB
        (tmp_path / f"{number:03}-{'x' * 44}.txt").write_text("new\n")
    prompt = await _prompt_of(sim, tmp_path)
    assert "Status as the session started (over " in prompt
    assert "\n    ... and over " in prompt
    assert "399-" not in prompt


async def test_too_many_filter_drivers_leave_the_status_unread(
    sim: Simulator, tmp_path: Path
) -> None:
    _git(tmp_path, "init", "-q", "-b", "main")
    config = "".join(f'[filter "f{number}"]\n\tclean = cat\n' for number in range(65))
    with (tmp_path / ".git" / "config").open("a") as file:
        file.write(config)
    prompt = await _prompt_of(sim, tmp_path)
    assert "not read: its configuration names over 64 filter drivers." in prompt
