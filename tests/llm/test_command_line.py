"""The shell command splitter (``oma_host.llm.command_line``) and the
permission rules it serves: a line cut into the simple commands ``/bin/sh``
runs, quotes respected, and certain only when nothing in it runs or touches
more than its parts say; then the policy's verdict on command lines, one
part at a time. Each split is checked against what ``/bin/sh`` itself does
with the line where that can be seen (the commands it runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oma_host.core.config import PermissionRule
from oma_host.core.tools import builtin_tool
from oma_host.llm.command_line import split_command
from oma_host.llm.permissions import command_target, evaluate
from oma_host.llm.shell_env import blanked_variables, shell_environment

CERTAIN = [
    ("git status", ["git status"]),
    ("git status && touch pwned", ["git status", "touch pwned"]),
    ("a||b", ["a", "b"]),
    ("a ; b ;; c", ["a", "b", "c"]),
    ("a | b |& c", ["a", "b", "c"]),
    ("a & b", ["a", "b"]),
    ("a\nb\n", ["a", "b"]),
    ('echo "a && b"', ['echo "a && b"']),
    ("echo 'a; b | c'", ["echo 'a; b | c'"]),
    ("echo a\\;b", ["echo a\\;b"]),
    ('echo "it\'s" \'"quoted"\'', ['echo "it\'s" \'"quoted"\'']),
    ("(cd sub && make) && ls", ["cd sub", "make", "ls"]),
    ("echo ${HOME:-a;b}", ["echo ${HOME:-a;b}"]),
    ("echo $HOME $# $?", ["echo $HOME $# $?"]),
    # Harmless redirects are left out of the part's text.
    ("git status 2>&1", ["git status"]),
    ("make >/dev/null 2>> /dev/null", ["make"]),
    ("cmd <&- >&2", ["cmd"]),
    ("echo a2>/dev/null", ["echo a2"]),
    ("echo a#b", ["echo a#b"]),
    ("FOO=1 git status", ["FOO=1 git status"]),
]

DOUBTFUL = [
    ("echo $(rm -rf x)", ["echo $(rm -rf x)", "rm -rf x"], "a command substitution"),
    ("echo `rm x`", ["echo `rm x`", "rm x"], "a command substitution"),
    ('echo "$(id)"', ['echo "$(id)"', "id"], "a command substitution"),
    ('echo "${x:-$(rm y)}"', ['echo "${x:-$(rm y)}"', "rm y"], "a command substitution"),
    ("echo $((1 + 2))", ["echo $((1 + 2))", "1 + 2"], "a command substitution"),
    ("git status > pwned", ["git status > pwned"], "a redirect"),
    ("sort < secrets", ["sort < secrets"], "a redirect"),
    ("cat >>log", ["cat >>log"], "a redirect"),
    ("echo x >/dev/nullx", ["echo x >/dev/nullx"], "a redirect"),
    ("diff <(ls a) b", ["diff <", "ls a", "b"], "a redirect"),
    ("cat <<EOF\nrm -rf x\nEOF", ["cat <<EOF", "rm -rf x", "EOF"], "a redirect"),
    ("git status # && rm", ["git status #", "rm"], "a comment"),
    ("echo $'a\\'; rm x'", ["echo $'a\\'", "rm x'"], "$'...' quoting"),
    ('echo "open', ['echo "open'], "an unclosed quote, parenthesis or substitution"),
    ("echo 'open", ["echo 'open"], "an unclosed quote, parenthesis or substitution"),
    ("(ls", ["ls"], "an unclosed quote, parenthesis or substitution"),
    ("ls)", ["ls"], "an unbalanced parenthesis"),
    ("echo \\", ["echo \\"], "a trailing backslash"),
    ("echo a\0; rm", ["echo a\0; rm"], "a NUL character"),
]


@pytest.mark.parametrize(("line", "parts"), CERTAIN)
def test_a_certain_split(line: str, parts: list[str]) -> None:
    split = split_command(line)
    assert list(split.parts) == parts
    assert split.certain


@pytest.mark.parametrize(("line", "parts", "doubt"), DOUBTFUL)
def test_a_doubtful_split_keeps_every_part_for_deny_rules(
    line: str, parts: list[str], doubt: str
) -> None:
    split = split_command(line)
    assert list(split.parts) == parts
    assert doubt in split.doubts and not split.certain


@pytest.mark.parametrize(
    "line",
    [
        "echo one && echo two",
        "echo 'a && b'; echo c && echo d",
        'echo "x;y"; echo z',
        "(echo in; echo sub) || echo never",
    ],
)
def test_the_parts_are_the_commands_sh_runs(line: str, tmp_path: Path) -> None:
    """Each part, traced by ``sh -x``, is one command sh ran (and no command
    ran that is not a part)."""
    traced = subprocess.run(
        ["/bin/sh", "-xc", line], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    ran = [row[2:] for row in traced.stderr.splitlines() if row.startswith("+ ")]
    parts = split_command(line).parts
    assert len(ran) == len([p for p in parts if "never" not in p])
    for command, part in zip(ran, parts, strict=False):
        assert command.split()[0] == part.split()[0]


SHELL = builtin_tool("shell")
RULES = [
    PermissionRule(tool="shell", pattern="rm *", action="deny"),
    PermissionRule(tool="shell", pattern="git push*", action="ask"),
    PermissionRule(tool="shell", pattern="git *", action="allow"),
    PermissionRule(tool="shell", pattern="ls*", action="allow"),
]


@pytest.mark.parametrize(
    ("line", "action", "rule"),
    [
        ("git status", "allow", 2),
        ("git status && ls -la", "allow", 2),
        ("git status 2>&1 | ls", "allow", 2),
        ("git status && touch x", "ask", None),  # the default for a part no rule matches
        ("git push --force", "ask", 1),
        ("git status; git push", "ask", 1),
        ("ls && rm -rf /", "deny", 0),
        ("git log $(rm -rf /)", "deny", 0),  # a deny sees inside a substitution
        ("git log $(ls)", "ask", None),  # a substitution: no allow with a pattern applies
        ("git status > out", "ask", None),
        ("git status # comment", "ask", None),
    ],
)
def test_a_command_line_is_decided_part_by_part_the_strictest_wins(
    line: str, action: str, rule: int | None
) -> None:
    assert SHELL is not None
    verdict = evaluate(RULES, SHELL, command_target(line))
    assert (verdict.action, verdict.rule) == (action, rule)


def test_a_rule_without_a_pattern_covers_any_line() -> None:
    assert SHELL is not None
    rules = [PermissionRule(tool="shell", action="allow")]
    assert evaluate(rules, SHELL, command_target("echo $(id) > out")).action == "allow"
    assert evaluate(rules, SHELL, command_target("ls"), "read-only").action == "deny"


def test_the_environment_is_an_allow_list_with_secrets_denied() -> None:
    host = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "XDG_CONFIG_HOME": "/home/u/.config",
        "EDITOR": "vim",
        "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
        "ANTHROPIC_API_KEY": "sk-ant-x",
        "AWS_PROFILE": "prod",
        "LC_SECRET": "holds the agent key k3y-value",
        "TMPDIR": "/tmp/k3y-value",
        "http_proxy": "http://u:p@proxy:8080",
        "no_proxy": "localhost",
    }
    passed = shell_environment(host, ["k3y-value"], PWD="/work")
    assert passed == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "XDG_CONFIG_HOME": "/home/u/.config",
        "EDITOR": "vim",
        "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
        "no_proxy": "localhost",
        "PWD": "/work",
    }
    blanked = blanked_variables(host)
    assert "ANTHROPIC_API_KEY" in blanked and "OPENAI_API_KEY" in blanked
    assert "AWS_PROFILE" in blanked and "PATH" not in blanked
