"""The built-in tools' confinement, walk and pattern matching, called
directly: names swapped for symlinks mid-call, symlinks in and out, loops,
FIFOs, cancellation and the time budget, glob as pathlib matches, and grep's
line search against searching each line."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_host.core.patterns import Pattern, PatternError
from oma_host.llm.tools import BUILTIN_TOOLS
from oma_host.llm.tools.base import Workspace, call_tool
from oma_host.llm.tools.grep import _LineSearch
from oma_host.workspace.confined import Cancelled, Root, Stop, ToolError, open_beneath, walk


def run_tool(name: str, root: Path, stop: Stop | None = None, **arguments: str) -> str:
    workspace = Workspace(str(root.resolve()))
    return asyncio.run(BUILTIN_TOOLS[name].execute(arguments, workspace, stop or Stop(60)))


def resolved(root: Path, path: str) -> str:
    with Root(str(root.resolve())) as opened:
        fd, where = open_beneath(opened, path, "path")
        os.close(fd)
        return where


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """work/ holds a/b.txt and symlinks in every direction; secret.txt is outside."""
    (tmp_path / "secret.txt").write_text("OUTSIDE")
    root = tmp_path / "work"
    (root / "a").mkdir(parents=True)
    (root / "a" / "b.txt").write_text("inside\n")
    (root / "rel").symlink_to("a/b.txt")
    (root / "abs").symlink_to(root / "a" / "b.txt")
    (root / "dir").symlink_to("a")
    (root / "up").symlink_to("..")
    (root / "out").symlink_to(tmp_path / "secret.txt")
    (root / "out-rel").symlink_to("../secret.txt")
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    (root / "a" / "self").symlink_to(".")
    (root / "a" / "parent").symlink_to("..")
    return root


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("a/b.txt", "a/b.txt"),
        ("./a//b.txt", "a/b.txt"),
        ("a/../a/b.txt", "a/b.txt"),
        ("rel", "a/b.txt"),
        ("abs", "a/b.txt"),
        ("dir/b.txt", "a/b.txt"),
        ("a/self/self/b.txt", "a/b.txt"),
        ("a/parent/rel", "a/b.txt"),
        (".", ""),
        ("a/..", ""),
    ],
)
def test_symlinks_and_dot_dots_that_stay_inside_are_followed(
    tree: Path, path: str, where: str
) -> None:
    assert resolved(tree, path) == where


def test_an_absolute_path_inside_the_root_is_taken_relative_to_it(tree: Path) -> None:
    assert resolved(tree, str(tree.resolve() / "a" / "b.txt")) == "a/b.txt"


@pytest.mark.parametrize("path", ["../secret.txt", "out", "out-rel", "up/secret.txt", "a/../.."])
def test_whatever_leads_outside_is_refused(tree: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the agent's working directory"):
        resolved(tree, path)


def test_an_absolute_path_outside_is_refused(tree: Path) -> None:
    with pytest.raises(ToolError, match="outside the agent's working directory"):
        resolved(tree, str(tree.parent / "secret.txt"))


@pytest.mark.parametrize("path", ["loop", "ping", "a/parent/pong", "loop/x"])
def test_symlink_loops_are_refused_not_followed_forever(tree: Path, path: str) -> None:
    with pytest.raises(ToolError, match="too many levels of symbolic links"):
        resolved(tree, path)


def test_depth_is_bounded_since_every_directory_on_the_way_is_held_open(
    tmp_path: Path,
) -> None:
    deep = tmp_path.joinpath(*["d"] * 130)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("needle\n")
    (tmp_path.joinpath(*["d"] * 100) / "g.txt").write_text("needle\n")
    with pytest.raises(ToolError, match="over 128 directories deep"):
        resolved(tmp_path, "/".join(["d"] * 130))
    assert (
        run_tool("grep", tmp_path, pattern="needle") == "/".join(["d"] * 100) + "/g.txt:1: needle"
    )


def test_a_file_in_the_middle_of_a_path_is_not_a_directory(tree: Path) -> None:
    with pytest.raises(ToolError, match="Not a directory"):
        resolved(tree, "a/b.txt/c")


def test_a_fifo_is_refused_without_being_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "real.txt").write_text("needle\n")
    with pytest.raises(ToolError, match="'pipe' is not a file or a directory"):
        run_tool("file_read", tmp_path, path="pipe")
    assert run_tool("grep", tmp_path, pattern="needle") == "real.txt:1: needle"
    assert run_tool("glob", tmp_path, pattern="*") == "real.txt"


async def test_file_read_and_grep_never_read_outside_while_a_name_flips_to_a_symlink(
    tmp_path: Path,
) -> None:
    (tmp_path / "secret.txt").write_text("OUTSIDE\n")
    root = tmp_path / "work"
    root.mkdir()
    name = root / "notes.txt"
    name.write_text("inside\n")
    stop = threading.Event()

    def flip() -> None:  # swap the name between a file and a symlink out, atomically
        link, plain = root / ".link", root / ".plain"
        while not stop.is_set():
            link.unlink(missing_ok=True)
            link.symlink_to(tmp_path / "secret.txt")
            os.replace(link, name)
            plain.write_text("inside\n")
            os.replace(plain, name)

    flipper = threading.Thread(target=flip)
    flipper.start()
    workspace = Workspace(str(root.resolve()))
    read, grep = BUILTIN_TOOLS["file_read"], BUILTIN_TOOLS["grep"]
    outputs: list[Any] = []
    try:
        for _ in range(500):
            outputs.append((await call_tool(read, {"path": "notes.txt"}, workspace))[0])
            outputs.append(
                (await call_tool(grep, {"pattern": "I", "path": "notes.txt"}, workspace))[0]
            )
            outputs.append((await call_tool(grep, {"pattern": "I"}, workspace))[0])
    finally:
        stop.set()
        flipper.join()
    assert not [output for output in outputs if "OUTSIDE" in output]
    assert "inside\n" in outputs  # the reads did happen


def test_loops_anywhere_in_the_tree_leave_grep_and_glob_working(tree: Path) -> None:
    (tree / "a" / "note.md").write_text("the needle\n")
    assert run_tool("grep", tree, pattern="needle") == "a/note.md:1: the needle"
    # Symlinks are listed as what they lead to when that is inside; loops,
    # dangling symlinks and symlinks out are not; "**" follows no symlink.
    assert run_tool("glob", tree, pattern="**/*").split("\n") == [
        "a",
        "a/b.txt",
        "a/note.md",
        "a/parent",
        "a/self",
        "abs",
        "dir",
        "rel",
    ]
    # A named component may go through a symlinked directory, but never
    # into a directory the walk is already inside.
    assert run_tool("glob", tree, pattern="dir/*.md") == "dir/note.md"
    assert run_tool("glob", tree, pattern="a/self/*/*") == "no paths match"
    assert (
        run_tool("grep", tree, pattern="inside")
        == "a/b.txt:1: inside\nabs:1: inside\nrel:1: inside"
    )


def test_grep_skips_hidden_directories_and_binary_files(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("needle\n")
    (tmp_path / "blob").write_bytes(b"needle\0")
    (tmp_path / ".env").write_text("needle\n")
    assert run_tool("grep", tmp_path, pattern="needle") == ".env:1: needle"


def test_grep_stops_at_200_matches(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 300)
    lines = run_tool("grep", tmp_path, pattern="hit").split("\n")
    assert len(lines) == 201 and lines[-1] == "[stopped at 200 matches]"
    assert lines[199] == "many.txt:200: hit"


def test_a_pattern_re2_cannot_run_is_an_error_saying_why(tmp_path: Path) -> None:
    for pattern in [r"(a)\1", "a(?=b)", "(?<!a)b"]:
        with pytest.raises(ToolError, match=r"RE2 can run: .*no backreferences or lookaround"):
            run_tool("grep", tmp_path, pattern=pattern)


def test_a_catastrophic_pattern_for_backtracking_answers_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(("a" * 28 + "!\n") * 50)
    assert run_tool("grep", tmp_path, pattern="(a+)+$") == "no matches"


def test_a_cancelled_walk_stops_before_the_next_entry(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"f{index}").write_text("needle\n")
    stop = Stop(60)
    with Root(str(tmp_path.resolve())) as root:
        start = os.open(".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=root.fd)
        try:
            entries = walk(root, start, "", None, stop, lambda entry: None)
            assert next(entries).path == "f0"
            stop.cancel()
            with pytest.raises(Cancelled):
                next(entries)
        finally:
            os.close(start)
    with pytest.raises(Cancelled):
        run_tool("grep", tmp_path, stop, pattern="needle")


def test_a_call_past_its_budget_answers_what_it_found(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("needle\n")
    assert run_tool("grep", tmp_path, Stop(0), pattern="needle") == (
        "[stopped after 0 s; search a narrower path]"
    )
    assert run_tool("glob", tmp_path, Stop(0), pattern="*") == (
        "[stopped after 0 s; use a narrower pattern]"
    )


@pytest.fixture
def plain_tree(tmp_path: Path) -> Path:
    """Files, hidden ones, an empty directory, and symlinks that stay inside
    without looping."""
    for path in [
        "a/b/c.py",
        "a/b/d.txt",
        "a/e.py",
        "a.py",
        "f/g/h/i.txt",
        ".hidden/j.py",
        "k.txt",
        "a/b/.dot.py",
    ]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "f" / "to-a").symlink_to("../a")
    (tmp_path / "k-link.txt").symlink_to("k.txt")
    return tmp_path


@pytest.mark.parametrize(
    "pattern",
    ["*", "**", "**/*.py", "a/*", "a/**", "a/**/*.txt", "*/b*", "**/b", "**/*", "*/*/*.py",
     "[af]/**/?.*", "a/b/*.py", "nope/*", "**/g/**", "./a/*.py", "a//e.py", "f/to-a/*",
     "f/to-a/**/*.py", "*/*/*.py", "**/to-a"],
)  # fmt: skip
def test_glob_lists_what_pathlib_glob_lists_in_the_same_order(
    plain_tree: Path, pattern: str
) -> None:
    expected = [str(p.relative_to(plain_tree)) for p in sorted(plain_tree.glob(pattern))]
    answer = run_tool("glob", plain_tree, pattern=pattern)
    assert answer.split("\n") == (expected or ["no paths match"])


def test_glob_stops_at_500_paths_in_order(tmp_path: Path) -> None:
    for index in range(600):
        (tmp_path / f"f{index:03}").touch()
    paths = run_tool("glob", tmp_path, pattern="*").split("\n")
    assert paths == [f"f{index:03}" for index in range(500)] + ["[stopped at 500 paths]"]


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "a/../../*"])
def test_glob_patterns_reaching_outside_are_refused(tmp_path: Path, pattern: str) -> None:
    with pytest.raises(ToolError, match="outside the agent's working directory"):
        run_tool("glob", tmp_path, pattern=pattern)


LINE_PATTERNS = [
    "a",
    "^a",
    "a$",
    "^$",
    "^",
    r"\ba\b",
    r"\Bb",
    r"\Aa",
    r"b\z",
    "(?-m)^b",
    "(?i)A B",
    "a b|^b",
    "[^a]",
    r"\s",
    "a*",
    "ab+a",
    r"(?s)a.b",
]


def lines_matching(pattern: str, lines: list[str]) -> Iterator[int]:
    compiled = Pattern(pattern)
    return (index for index, line in enumerate(lines) if compiled.search(line))


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.sampled_from(LINE_PATTERNS),
    lines=st.lists(st.text(alphabet="ab _é", max_size=6), max_size=8),
)
def test_grep_line_search_finds_exactly_the_lines_each_line_search_finds(
    pattern: str, lines: list[str]
) -> None:
    found = list(_LineSearch(pattern).matching(lines, Stop(60)))
    assert found == list(lines_matching(pattern, lines))


def test_patterns_re2_cannot_run_say_what_it_lacks() -> None:
    with pytest.raises(PatternError, match=r"invalid perl operator: \(\?=.*lookaround"):
        Pattern("x(?=y)")
    assert Pattern("(a+)+$").search("a" * 28 + "!") is False
    assert Pattern("caf.").search("café \ud800") is True
