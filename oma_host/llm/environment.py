"""The host's part of an LLM agent's system prompt (``environment: true``).

Where the agent works, its git state, its tools and permission mode, and the
project's ``AGENTS.md`` instructions, gathered once before the first request so
the system prompt stays the same and a provider's prompt cache keeps it. The
repository is not trusted: ``git`` runs with every setting that could run a
command switched off, and its files are opened confined, regular files only.
Nothing here fails a run. docs/tools.md, "The environment prompt".
"""

from __future__ import annotations

import asyncio
import codecs
import datetime
import errno
import logging
import os
import platform
import re
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from oma_host.core.config import DEFAULT_TOOL_TIMEOUT_MS, AgentConfig, PermissionMode
from oma_host.core.places import config_dir
from oma_host.workspace.confined import Root, ToolError, open_beneath, read_at_most
from oma_host.workspace.sandbox import chosen_sandbox, sandbox_note
from oma_host.workspace.shell.runner import HeadTail, run_command

log = logging.getLogger(__name__)

# The instruction files of a directory, the first found read.
INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
FILE_LIMIT = 32 * 1024  # bytes of one instruction file
TOTAL_LIMIT = 64 * 1024  # bytes of all of them
GIT_TIMEOUT_S = 3.0  # each git command
GIT_OUTPUT_CHARS = 16 * 1024  # what is read of a git command's output
STATUS_LINES = 20  # the status lines shown; the rest are counted
# A configuration naming more filter drivers than this has its status unread
# (each is switched off by a setting passed to git).
MAX_FILTER_DRIVERS = 64
# Opening a FIFO must not wait for a writer; a terminal must not become the
# host's controlling one.
_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# What git is run with of the host's environment (no secrets: the rest is
# left out), and the settings that keep it from writing or asking.
_GIT_PASSED = ("PATH", "HOME", "XDG_CONFIG_HOME", "SYSTEMROOT")
_GIT_QUIET = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}
# Settings of the repository that make ``git status`` run a command.
_GIT_SAFE = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("status.submoduleSummary", "false"),
)
_FILTER_NAME = re.compile(r"filter\.(.+)\.[^.]+", re.DOTALL)
# A line of ``git status --porcelain``: two status letters and a path.
_STATUS_LINE = re.compile(r"[ MTADRCU?!]{2} .")


@dataclass(frozen=True)
class Instructions:
    """One instruction file as the prompt shows it."""

    path: str  # as shown: absolute, the user's file with ``~``
    text: str
    size: int  # the file's size in bytes
    shown: int  # the bytes of it shown


@dataclass(frozen=True)
class GitState:
    """The repository the working directory is in: where, and what git said
    of it, its branch and status lines (``problem`` says why they could not
    be read, when they could not)."""

    root: str
    branch: str | None = None
    status: tuple[str, ...] = ()
    more: bool = False  # the status has more lines than were read
    problem: str | None = None


@dataclass(frozen=True)
class Environment:
    """Everything gathered for the prompt, at the session's start."""

    cwd: str
    date: str
    system: str
    shell: str | None
    git: GitState | None  # None: not in a repository
    instructions: tuple[Instructions, ...]
    omitted: tuple[str, ...]  # instruction files left out for the total limit
    # The additional directories the tools reach (absolute, resolved).
    folders: tuple[str, ...] = ()


async def gather_environment(cwd: str, folders: tuple[str, ...] = ()) -> Environment:
    """The environment of an agent working in ``cwd`` (absolute, resolved)
    and reaching ``folders`` besides."""
    root = _repository_root(cwd)
    git = await _git_state(cwd, root) if root is not None else None
    instructions, omitted = await asyncio.to_thread(_read_instructions, cwd, root or cwd)
    return Environment(
        cwd=cwd,
        date=datetime.date.today().isoformat(),
        system=f"{platform.system()} {platform.release()} ({platform.machine()})",
        shell=os.environ.get("SHELL") or None,
        git=git,
        instructions=instructions,
        omitted=omitted,
        folders=folders,
    )


def _repository_root(cwd: str) -> str | None:
    """The nearest directory at or above ``cwd`` holding ``.git``."""
    directory = cwd
    while True:
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


# -- git --------------------------------------------------------------------------


async def _git(
    cwd: str, args: Sequence[str], settings: Sequence[tuple[str, str]]
) -> tuple[str, bool]:
    """The output of ``git ARGS`` in ``cwd``, with ``settings`` over the
    repository's configuration, to :data:`GIT_OUTPUT_CHARS`, and whether
    that is all of it; _GitFailed when it gives none."""
    env = {name: os.environ[name] for name in _GIT_PASSED if name in os.environ}
    env.update(_GIT_QUIET)
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for index, (key, value) in enumerate(settings):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    kept = HeadTail(GIT_OUTPUT_CHARS, 0)
    try:
        ending = await run_command(
            ["git", "--no-pager", *args],
            cwd=cwd,
            env=env,
            timeout_s=GIT_TIMEOUT_S,
            kept=kept,
            on_output=lambda _: None,
        )
    except ToolError as error:
        raise _GitFailed(f"git could not be run ({error})") from None
    if ending.timed_out:
        raise _GitFailed(f"git did not answer within {GIT_TIMEOUT_S:g} s")
    if ending.exit_code != 0:
        raise _GitFailed(f"git failed (exit status {ending.exit_code})", ending.exit_code)
    whole = kept.total <= GIT_OUTPUT_CHARS
    return kept.text()[:GIT_OUTPUT_CHARS], whole  # the head, without the cut's mark


class _GitFailed(Exception):
    """A git command that gave no answer; its message says why."""

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _filter_settings(listing: str) -> list[tuple[str, str]] | None:
    """Settings switching off every filter driver ``git config --null
    --name-only --get-regexp ^filter\\.`` listed; None when there are too many."""
    names = {
        found.group(1)
        for key in listing.split("\0")
        if (found := _FILTER_NAME.fullmatch(key.strip("\n"))) is not None
    }
    if len(names) > MAX_FILTER_DRIVERS:
        return None
    return [
        (f"filter.{name}.{key}", value)
        for name in sorted(names)
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    ]


async def _git_state(cwd: str, root: str) -> GitState:
    try:
        listing, whole = await _git(
            cwd, ["config", "--null", "--name-only", "--get-regexp", r"^filter\."], _GIT_SAFE
        )
    except _GitFailed as failed:
        if failed.exit_code != 1:  # 1: no filter driver is configured
            return GitState(root, problem=str(failed))
        listing, whole = "", True
    filters = _filter_settings(listing) if whole else None
    if filters is None:
        problem = f"its configuration names over {MAX_FILTER_DRIVERS} filter drivers"
        return GitState(root, problem=problem)
    args = ["status", "--porcelain=v1", "--branch", "--ignore-submodules=all"]
    try:
        output, whole = await _git(cwd, args, [*_GIT_SAFE, *filters])
    except _GitFailed as failed:
        return GitState(root, problem=str(failed))
    lines = output.splitlines()
    if not whole:
        lines.pop()  # cut in the middle, perhaps
    branch = next((line[3:] for line in lines if line.startswith("## ")), None)
    status = tuple(line for line in lines if _STATUS_LINE.match(line))
    return GitState(root, branch=branch, status=status, more=not whole)


# -- instruction files ------------------------------------------------------------


class _Budget:
    """The bytes the instruction files may still take."""

    def __init__(self) -> None:
        self.left = TOTAL_LIMIT


def _read_instructions(cwd: str, root: str) -> tuple[tuple[Instructions, ...], tuple[str, ...]]:
    """The user's instruction file, then the project's from ``root`` down to
    ``cwd``; and the files left out for the total limit."""
    budget = _Budget()
    found: list[Instructions] = []
    omitted: list[str] = []
    user = os.path.join(config_dir(), "AGENTS.md")
    _add(found, omitted, budget, _shown_path(user), _open_user_file(user))
    try:
        with Root(root) as confined:
            for directory in _levels(root, cwd):
                for name in INSTRUCTION_FILES:
                    path = os.path.join(directory, name)
                    if _add(found, omitted, budget, path, _open_project_file(confined, path)):
                        break
    except ToolError as error:
        log.info("the project's instruction files were not read: %s", error)
    return tuple(found), tuple(omitted)


def _levels(root: str, cwd: str) -> Iterable[str]:
    """``root``, then each directory below it down to ``cwd``."""
    yield root
    relative = os.path.relpath(cwd, root)
    if relative == ".":
        return
    directory = root
    for part in relative.split(os.sep):
        directory = os.path.join(directory, part)
        yield directory


def _shown_path(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


def _open_user_file(path: str) -> int | None:
    """The user's own file: their symlink is theirs to follow."""
    try:
        return os.open(path, _OPEN)
    except OSError as error:
        if error.errno != errno.ENOENT:
            log.info("%s was not read: %s", path, error.strerror)
        return None


def _open_project_file(root: Root, path: str) -> int | None:
    """A file of the repository, resolved beneath its root."""
    try:
        fd, _ = open_beneath(root, path, "instruction file")
    except ToolError as error:
        if error.code != errno.ENOENT:
            log.info("%s was not read: %s", path, error)
        return None
    return fd


def _add(
    found: list[Instructions], omitted: list[str], budget: _Budget, shown: str, fd: int | None
) -> bool:
    """Read the instruction file open as ``fd`` into ``found`` (or
    ``omitted``, when the total is spent) and close it; whether it was a
    regular file."""
    if fd is None:
        return False
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return False
        if budget.left <= 0:
            omitted.append(shown)
            return True
        limit = min(FILE_LIMIT, budget.left)
        data = read_at_most(fd, limit + 1)
    except OSError as error:
        log.info("%s was not read: %s", shown, error.strerror)
        return False
    finally:
        os.close(fd)
    cut = len(data) > limit
    data = data[:limit]
    budget.left -= len(data)
    # A cut in the middle of a character drops that character.
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(data, final=not cut)
    found.append(Instructions(shown, text, max(info.st_size, len(data)), len(data)))
    return True


# -- the prompt -------------------------------------------------------------------


def environment_prompt(environment: Environment, config: AgentConfig, tools: Sequence[str]) -> str:
    """The host's part of the system prompt for an agent of ``config``
    offered the built-in ``tools``."""
    parts = [
        _where(environment),
        _tools(config, tools),
        _instructions(environment),
    ]
    return "\n\n".join(part for part in parts if part)


def _where(environment: Environment) -> str:
    lines = [
        "You are a coding agent, working in the user's project through oma-host.",
        "",
        "# Environment",
        "",
        f"- Working directory: {environment.cwd}",
    ]
    if environment.folders:
        lines.append(
            "- Additional directories (the tools reach them too; name files there by "
            "absolute path): " + ", ".join(environment.folders)
        )
    lines.append(f"- OS: {environment.system}")
    if environment.shell:
        lines.append(f"- The user's shell: {environment.shell}")
    lines.append(f"- Today's date: {environment.date}")
    git = environment.git
    if git is None:
        lines.append("- Git: the working directory is not in a git repository.")
        return "\n".join(lines)
    lines.append(f"- Git: the working directory is in the repository at {git.root}.")
    if git.problem is not None:
        lines.append(f"  Its branch and status were not read: {git.problem}.")
        return "\n".join(lines)
    if git.branch is not None:
        lines.append(f"  Branch: {git.branch}")
    if not git.status and not git.more:
        lines.append("  Status: no changes (as the session started).")
        return "\n".join(lines)
    count = f"{'over ' if git.more else ''}{len(git.status)} changed paths"
    lines.append(f"  Status as the session started ({count}, relative to the repository's root):")
    lines.extend(f"    {line}" for line in git.status[:STATUS_LINES])
    hidden = len(git.status) - STATUS_LINES
    if git.more:
        lines.append(f"    ... and over {hidden} more" if hidden > 0 else "    ... and more")
    elif hidden > 0:
        lines.append(f"    ... and {hidden} more")
    return "\n".join(lines)


_MODES: dict[PermissionMode, str] = {
    "ask": (
        "reading tools (file_read, grep, glob, update_plan) run at once; file writes, "
        "commands and any other tool ask the user first."
    ),
    "accept-edits": (
        "reading tools and file writes run at once; commands and any other tool ask the user first."
    ),
    "auto": (
        "reading tools and file writes run at once, and so do commands that run in the "
        "sandbox; a command outside it and any other tool ask the user first."
    ),
    "read-only": "only reading tools run (see below).",
}


def _tools(config: AgentConfig, tools: Sequence[str]) -> str:
    mode = config.permission_mode or "ask"
    lines = ["# Tools", ""]
    if not tools:
        lines.append("You have no built-in tools: you cannot read or change files yourself.")
    else:
        lines.append(f"Your built-in tools: {', '.join(tools)}.")
        lines.append(
            "- Paths are relative to the working directory, and no tool reaches outside it "
            "(`..`, absolute paths elsewhere and symlinks leading out are refused)."
        )
    if {"file_edit", "file_write"} & set(tools):
        lines.append(
            "- Read a file before changing it; file_edit replaces one exact piece of "
            "text, file_write writes a whole file."
        )
    if "shell" in tools:
        limit_s = (config.tool_timeout_ms or DEFAULT_TOOL_TIMEOUT_MS) / 1000
        lines.append(
            "- shell runs a command line with /bin/sh -c in the working directory, with "
            f"no input, for at most {limit_s:g} s; use it to run tests, builds and git. "
            "Do not start commands that wait for input or never end."
        )
        sandbox = chosen_sandbox(config.permission_mode, config.sandbox)
        if sandbox != "off":
            lines.append(
                f"- shell commands run in {sandbox_note(sandbox)}: they may read the whole "
                "machine. If one fails because of the sandbox, you may call shell again with "
                "the same command, unsandboxed: true and a reason; the user is asked first."
            )
    if "update_plan" in tools:
        lines.append(
            "- For a task of several steps, keep a plan with update_plan, sending the "
            "whole plan each time a step starts or is done."
        )
    if "delegate" in tools:
        lines.append("- delegate hands a task to another agent; its description names them.")
    lines.extend(
        [
            "",
            f"Permission mode: {mode}. {_MODES[mode].capitalize()}",
            "The user's permission rules may allow or refuse some calls without asking. "
            "A refused call comes back as an error result: do not try to reach the same "
            "end another way; say what you wanted to do and why.",
        ]
    )
    return "\n".join(lines)


def _instructions(environment: Environment) -> str:
    if not environment.instructions:
        return ""
    lines = [
        "# Instructions",
        "",
        "The user's and the project's instruction files follow, the more general first; "
        "a later one refines an earlier one, and the user's requests come before them all.",
    ]
    for found in environment.instructions:
        lines.extend(["", f"## {found.path}", "", found.text.rstrip("\n")])
        if found.shown < found.size:
            lines.append(
                f"[... cut: the file has {found.size} bytes, of which the first "
                f"{found.shown} are shown]"
            )
    for path in environment.omitted:
        lines.extend(
            ["", f"[{path} was left out: the instruction files' limit of {TOTAL_LIMIT} bytes]"]
        )
    return "\n".join(lines)
