"""The built-in tools with additional directories (``additionalDirectories``),
called directly: each folder confined as ``cwd`` is, symlinks never leading
from one folder into another or out, files there named by absolute path, and
the permission rules matching those names."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from oma_host.core.config import PermissionRule, parse_agent_config
from oma_host.core.errors import InvalidParamsError
from oma_host.core.tools import FILE_WRITE
from oma_host.llm.tools import BUILTIN_TOOLS
from oma_host.llm.tools.base import Workspace
from oma_host.workspace.confined import Root, Stop, ToolError, root_of
from oma_host.workspace.permissions import SearchRules, evaluate, find_target


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """work/ is cwd, with main.txt; extra/ is an additional directory, with
    notes/todo.txt, a symlink out of it and one into work/; secret.txt is
    outside both."""
    (tmp_path / "secret.txt").write_text("OUTSIDE\n")
    work, extra = tmp_path / "work", tmp_path / "extra"
    work.mkdir()
    (work / "main.txt").write_text("in the working directory\n")
    (extra / "notes").mkdir(parents=True)
    (extra / "notes" / "todo.txt").write_text("needle in the extra folder\n")
    (extra / "out").symlink_to(tmp_path / "secret.txt")
    (extra / "to-work").symlink_to(work / "main.txt")
    (extra / "inner").symlink_to("notes/todo.txt")
    return work.resolve(), extra.resolve()


def run(name: str, folders: tuple[Path, Path], **arguments: str) -> str:
    work, extra = folders
    workspace = Workspace(str(work), folders=(str(extra),))
    return asyncio.run(BUILTIN_TOOLS[name].execute(arguments, workspace, Stop(60)))


def test_root_of_picks_cwd_for_relative_paths_and_the_folder_holding_absolute_ones() -> None:
    roots = ("/w", "/x", "/x/y")
    assert root_of("a/b", roots) == "/w"
    assert root_of("/x/y/z", roots) == "/x"  # the first that holds it
    assert root_of("/x", roots) == "/x"
    assert root_of("/w/../x/a", roots) == "/x"  # lexically, once .. is folded
    assert root_of("/xy/a", roots) == "/w"  # a name that only starts alike
    assert root_of("/elsewhere", roots) == "/w"


def test_a_file_in_an_additional_directory_is_read_by_absolute_path(
    folders: tuple[Path, Path],
) -> None:
    _, extra = folders
    text = run("file_read", folders, path=str(extra / "notes" / "todo.txt"))
    assert text == "needle in the extra folder\n"
    # A symlink that stays inside the folder is followed.
    assert run("file_read", folders, path=str(extra / "inner")) == text
    # Relative paths stay relative to cwd.
    assert run("file_read", folders, path="main.txt") == "in the working directory\n"


@pytest.mark.parametrize("target", ["out", "to-work", "../secret.txt", "notes/../../secret.txt"])
def test_nothing_leads_out_of_an_additional_directory(
    folders: tuple[Path, Path], target: str
) -> None:
    """A symlink out of the folder (even into cwd) and ``..`` are refused,
    naming every folder."""
    _, extra = folders
    with pytest.raises(ToolError, match="outside the agent's working directory and its additional"):
        run("file_read", folders, path=f"{extra}/{target}")


def test_a_path_outside_every_folder_is_refused(folders: tuple[Path, Path]) -> None:
    work, _ = folders
    with pytest.raises(ToolError, match="is outside"):
        run("file_read", folders, path=str(work.parent / "secret.txt"))


def test_grep_and_glob_search_an_additional_directory_naming_its_files_absolutely(
    folders: tuple[Path, Path],
) -> None:
    work, extra = folders
    todo = extra / "notes" / "todo.txt"
    assert run("grep", folders, pattern="needle", path=str(extra)).splitlines() == [
        f"{extra / 'inner'}:1: needle in the extra folder",  # walked in name order
        f"{todo}:1: needle in the extra folder",
    ]
    assert run("grep", folders, pattern="needle") == "no matches"  # cwd by default
    assert run("glob", folders, pattern=f"{extra}/**/*.txt").splitlines() == [str(todo)]
    assert run("glob", folders, pattern="*.txt") == "main.txt"
    with pytest.raises(ToolError, match="is outside"):
        run("glob", folders, pattern=f"{work.parent}/*.txt")


def test_a_write_in_an_additional_directory_lands_there(folders: tuple[Path, Path]) -> None:
    _, extra = folders
    said = run("file_write", folders, path=str(extra / "new" / "made.txt"), content="made\n")
    assert said.startswith("created")
    assert (extra / "new" / "made.txt").read_text() == "made\n"
    run("file_edit", folders, path=str(extra / "new" / "made.txt"), old="made", new="edited")
    assert (extra / "new" / "made.txt").read_text() == "edited\n"


def test_rules_match_a_file_in_an_additional_directory_by_its_absolute_path(
    folders: tuple[Path, Path],
) -> None:
    work, extra = folders
    path = str(extra / "notes" / "todo.txt")
    with Root(str(extra)) as root:
        target = find_target(FILE_WRITE, {"path": path}, root, cwd=str(work))
    assert target.resolved == path
    relative = [PermissionRule(tool="file_write", pattern="notes/*", action="allow")]
    absolute = [PermissionRule(tool="file_write", pattern=f"{extra}/notes/*", action="allow")]
    # A pattern relative to cwd says nothing of another folder: the default asks.
    assert evaluate(relative, FILE_WRITE, target).action == "ask"
    assert evaluate(absolute, FILE_WRITE, target).action == "allow"
    # A protected place in the folder is asked about whatever allows it.
    (extra / ".git").mkdir()
    with Root(str(extra)) as root:
        hook = find_target(FILE_WRITE, {"path": f"{extra}/.git/hooks/x"}, root, cwd=str(work))
    everything = [PermissionRule(tool="file_write", action="allow")]
    assert evaluate(everything, FILE_WRITE, hook).by == "protected"


def test_a_search_leaves_out_what_a_rule_keeps_from_an_additional_directory(
    folders: tuple[Path, Path],
) -> None:
    work, extra = folders
    deny = [PermissionRule(tool="file_read", pattern=f"{extra}/notes/*", action="deny")]
    rules = SearchRules(deny, "grep", str(work))
    assert rules.hides("notes/todo.txt", "notes/todo.txt", reads=True, root=str(extra))
    assert not rules.hides("notes/todo.txt", "notes/todo.txt", reads=True)  # in cwd: no
    workspace = Workspace(str(work), folders=(str(extra),), search_rules=rules)
    found = asyncio.run(
        BUILTIN_TOOLS["grep"].execute({"pattern": "needle", "path": str(extra)}, workspace, Stop(9))
    )
    assert found.splitlines() == ["no matches", "[2 paths left out by the permission rules]"]


def test_a_config_refuses_a_relative_additional_directory_naming_it() -> None:
    with pytest.raises(
        InvalidParamsError, match=r"config.additionalDirectories\[1\] must be an abs"
    ):
        parse_agent_config({"name": "a", "model": "m", "additionalDirectories": ["/tmp", "src"]})
