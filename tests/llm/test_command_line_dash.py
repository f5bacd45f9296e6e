"""The shell command splitter (``oma_host.workspace.command_line``) against
``dash`` itself: seeded, generated lines full of what sh reads in its own
way (quotes of every kind, ``$``, ``$$``, ``${...}`` with operators,
``$(...)``, backquotes, arithmetic, escapes, separators, comments,
redirects, here documents, subshells, braces, reserved words) are split by
the splitter and run by ``dash`` with every command traced, and wherever
the two disagree on what runs, the test fails and prints the line.

How dash is made to tell what it runs, soundly and fast:

- Every line runs once in a subshell of one ``dash`` process per batch, as
  ``( eval 'set -x<newline>LINE' )``: ``eval`` parses and runs its string
  one complete command at a time, exactly as ``sh -c`` does (a syntax error
  ends the subshell, as it ends ``sh -c``). ``set -x`` makes dash print each
  simple command it runs (after expansion, before running it) to stderr,
  whatever the command is: builtin, function, or one not found.
- Nothing a line runs can do harm or stall: ``PATH`` names no folder, the
  command words the generator uses are shell functions that only return 0
  or 1 (``ls``, ``git``, ... succeed; ``grep``, ``touch``, ... fail, so both
  sides of ``&&`` and ``||`` run; their own trace goes to ``/dev/null``),
  the working directory is one dash removed
  (a redirect can create no file there and a pattern matches nothing), and
  the generator refuses lines that could define a function (``name()``),
  loop without end (``while``, ``until``) or reach a builtin that changes the
  shell (``eval``, ``exec``, ``set``, ``trap``, ``alias``, ``cd``, ``kill``
  ...). Standard input is ``/dev/null``.
- stderr is a ``SOCK_SEQPACKET`` socket with ``SO_PASSCRED``: dash writes a
  trace in pieces (``PS4``, each word, the newline), each piece is one
  message, and each message carries the pid that wrote it, so traces of the
  processes a pipeline, ``&`` or a substitution runs at once are pulled
  apart exactly. ``PS4`` is ``+TAG`` with the number of the run, so a
  background job's late trace still says which line it belongs to; before
  each run the script writes ``@@TAG``, so dash's syntax error messages
  are told apart too. Where ``2>&1`` inside a substitution carries a trace
  or an error message into a word, its run number and line number are left
  out of the comparison (they differ between a line and its part).
- Each part the splitter found runs the same way on its own, in the same
  dash (once per distinct text). Two dash processes run batches of 2,500
  lines with their parts at once: about 20 s in all. Then, for every line:

  A. every command dash ran for the line is one that some part, run on its
     own, runs (same words): no command is hidden inside another part;
  B. every part, run on its own, runs at most one command besides those of
     the parts it holds (its command substitutions, and theirs): a part is
     one simple command, never two (not checked where dash refuses the
     line: it runs nothing of it past the error);
  C. a line dash refuses with a syntax error is one the splitter says sh
     would refuse (the other way round cannot be seen: dash stops at the
     first error of any kind, such as a bad substitution, and never reads
     the rest).

  For a line the splitter calls uncertain, A and B still hold (``deny``
  rules see every command); "uncertain" is agreement only for what an
  ``allow`` rule may do, since no ``allow`` rule with a pattern applies to
  such a line. How many lines are uncertain, and why, is printed, and the
  common real commands at the end must stay certain and allowable.
"""

from __future__ import annotations

import os
import random
import re
import shutil
import socket
import struct
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from oma_host.core.config import PermissionRule
from oma_host.core.tools import builtin_tool
from oma_host.workspace.command_line import (
    SYNTAX_ERROR,
    UNBALANCED,
    UNCLOSED,
    CommandSplit,
    split_command,
)
from oma_host.workspace.permissions import command_target, evaluate

DASH = shutil.which("dash")
# Outside CI a machine without them skips; under CI (CI set) it fails instead.
pytestmark = pytest.mark.skipif(
    (DASH is None or not hasattr(socket, "SO_PASSCRED")) and not os.environ.get("CI"),
    reason="needs dash (Debian's /bin/sh) and Linux's SO_PASSCRED",
)

SEED = int(os.environ.get("OMA_SPLIT_SEED", "39"))
LINES = int(os.environ.get("OMA_SPLIT_LINES", "10000"))
BATCH = 2500  # lines (with their parts) per dash process
TIMEOUT_S = 240  # for one batch, far above what it takes

# The command words: functions that succeed, and functions that fail.
SUCCEED = ["ls", "git", "cat", "make", "npm"]
FAIL = ["grep", "touch", "rm", "pytest", "wc"]
ARGS = ["-la", "a", "b", "status", "x.py", "*.py", "{}", "%", "=", "q", "-k", "--", "a=b"]
ARGS += ["/dev/null", "~", "~/q", "p/q", "z,y", "[ab]", "@", "+", "1", "2", "M", "-"]
# Names of builtins a line must not reach (they change the shell or loop),
# and reserved words that loop.
FORBIDDEN = {"eval", "exec", "exit", "return", "break", "continue", "trap", "set", "shift"}
FORBIDDEN |= {"unset", "alias", "unalias", "kill", "export", "readonly", "local", "cd"}
FORBIDDEN |= {"chdir", "read", "wait", "ulimit", "umask", "times", "getopts", "hash"}
FORBIDDEN |= {"type", "fg", "bg", "jobs", "fc", "command", "while", "until", "source"}


class Generator:
    """Lines made of pieces sh reads in its own ways, seeded."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.well_formed: set[str] = set()  # the lines made to be ones sh accepts

    def line(self) -> str:
        while True:
            well_formed = self.random.random() < 0.5
            if well_formed:
                text = self.well_formed_list(0)
            else:
                text = self.sequence(0, self.random.randint(1, 9), command=True)
            if admissible(text):
                if well_formed:
                    self.well_formed.add(text)
                return text

    # -- lines sh accepts, made of the same pieces -----------------------------

    def well_formed_list(self, depth: int) -> str:
        count = self.random.randint(1, 4 - depth)
        text = self.well_formed_command(depth)
        for _ in range(count - 1):
            joiner = self.random.choice([" ; ", "; ", " && ", "||", " | ", " & ", "\n", " &&\n"])
            text += joiner + self.well_formed_command(depth)
        if depth == 0 and self.random.random() < 0.05:  # a here document ends the line
            text += self.random.choice([" <<E\nbody $x\nE", " <<'E'\n$(rm)\nE", " <<-E\n\tb\n\tE"])
        elif depth == 0 and self.random.random() < 0.1:
            text += self.random.choice([" # c; rm", "  #x", " &"])
        return text

    def well_formed_command(self, depth: int) -> str:
        choice = self.random.random()
        if depth < 2 and choice < 0.06:
            return f"( {self.well_formed_list(depth + 1)} )"
        if depth < 2 and choice < 0.1:
            return "{ " + self.well_formed_list(depth + 1) + "; }"
        if depth < 2 and choice < 0.14:
            condition, body = self.well_formed_list(depth + 1), self.well_formed_list(depth + 1)
            return f"if {condition}; then {body}; else {self.well_formed_command(depth + 1)}; fi"
        if depth < 2 and choice < 0.17:
            return f"for v in a $x; do {self.well_formed_list(depth + 1)}; done"
        if depth < 2 and choice < 0.2:
            return f"case $x in a|X) {self.well_formed_list(depth + 1)};; *) ls;; esac"
        if choice < 0.23:
            return "! " + self.simple(depth)
        return self.simple(depth)

    def simple(self, depth: int) -> str:
        words = []
        if self.random.random() < 0.1:
            words.append(self.random.choice(["v=1", "w=$x", "v='a b'", 'w="$(ls)"']))
        words.append(self.command_word())
        for _ in range(self.random.randint(0, 4 - 2 * depth)):
            words.append(self.well_formed_word(depth))
        if self.random.random() < 0.2:
            words.append(
                self.random.choice(["2>&1", ">/dev/null", "2>/dev/null", "<&-", ">&2", "> o.log"])
            )
        return " ".join(words)

    def well_formed_word(self, depth: int) -> str:
        choice = self.random.randrange(16)
        if choice < 5:
            return self.random.choice(ARGS)
        if choice == 5:
            return (
                "'"
                + self.random.choice(["a; b", "$x", "`ls`", '"', "a\\", "}", "${x", "&& rm"])
                + "'"
            )
        if choice in (6, 7):
            inner = self.random.choice(["a b", "$x", "${x-a}", "a;b", "'", '\\"', "\\$x", "}", "#"])
            if depth < 2 and self.random.random() < 0.2:
                inner = "$( " + self.well_formed_list(depth + 1) + ")"
            return '"' + inner + self.random.choice(["", " q", "'}"]) + '"'
        if choice == 8:
            return self.random.choice(
                ["$x", "$$", "$#", "$1", "$@", "${x}", "${#x}", "$u", "$$x", "$${x}"]
            )
        if choice == 9:
            operator = self.operator() or "-"
            value = self.random.choice(["a", "a b", "'}'", '"}"', "\\}", "$x", "a;b", ""])
            return "${x" + operator + value + "}"
        if choice == 10:  # the two kinds of probe: quotes in "${...}", and $$ before {
            return self.random.choice(
                ['"${x-\'}"', "\"${u-'}'}\"", "$${x-a}", "$${x-", "\"${x#'a'}\"", "$$}"]
            )
        if choice == 11 and depth < 2 and self.random.random() < 0.5:
            return "$( " + self.well_formed_list(depth + 1) + ")"
        if choice == 12 and depth < 2 and self.random.random() < 0.5:
            return "`" + self.well_formed_list(depth + 1).replace("`", "") + "`"
        if choice == 13:
            return self.random.choice(["\\;", "\\&", "\\|", "\\ ", "\\'", "a\\\nb", "\\#", "\\}"])
        if choice == 14:
            return self.random.choice(["$((1+2))", "~/q", "*.py", "{a,b}", "a=b", "-k", "--x=1"])
        return self.random.choice(SUCCEED + FAIL)

    def sequence(self, depth: int, count: int, *, command: bool) -> str:
        pieces: list[str] = []
        at_command = command
        for _ in range(count):
            if at_command and self.random.random() < 0.7:
                piece = self.command_word()
            else:
                piece = self.piece(depth)
            at_command = piece.strip() in (";", "&&", "||", "|", "&", "\n", "(", "{", "then", "do")
            pieces.append(piece)
            pieces.append(self.random.choice([" ", " ", " ", "", "\t"]))
        return "".join(pieces).rstrip(" \t")

    def command_word(self) -> str:
        word = self.random.choice(SUCCEED + FAIL)
        shape = self.random.random()
        if shape < 0.08:
            return "\\" + word
        if shape < 0.14:
            return f"'{word}'"
        if shape < 0.18:
            return f'{word[0]}""{word[1:]}'
        return word

    def piece(self, depth: int) -> str:
        kinds = ["word", "word", "word", "separator", "separator", "quote", "quote", "dollar"]
        kinds += ["dollar", "dollar", "escape", "redirect", "group", "keyword", "comment"]
        kinds += ["assignment", "backquote"]
        kind = self.random.choice(kinds if depth < 3 else ["word", "separator", "escape"])
        return str(getattr(self, kind)(depth))

    def word(self, depth: int) -> str:
        return self.random.choice(ARGS + SUCCEED + FAIL)

    def separator(self, depth: int) -> str:
        choices = [";", ";", "&&", "||", "|", "&", "\n", "\n", ";;", "|&", "&>", "!"]
        return self.random.choice(choices)

    def inner(self, depth: int) -> str:
        return self.sequence(depth + 1, self.random.randint(0, 4), command=False)

    def quote(self, depth: int) -> str:
        choice = self.random.randrange(7)
        if choice == 0:
            return "'" + self.inner(depth).replace("'", "") + "'"
        if choice in (1, 2):
            return '"' + self.inner(depth) + '"'
        if choice == 3:
            return self.random.choice(["'", '"', "''", '""'])
        if choice == 4:  # a double-quoted ${...} holding quotes (dash: plain characters)
            quote = self.random.choice(["'", '"', "'}'", "\\'"])
            return f'"${{x{self.operator()}{quote}{self.inner(depth)}}}"'
        if choice == 5:
            return "$'" + self.inner(depth).replace("'", "") + "'"
        return '$"' + self.inner(depth).replace('"', "") + '"'

    def operator(self) -> str:
        return self.random.choice(["-", ":-", "+", ":+", "=", ":=", "?", "#", "##", "%", "%%", ""])

    def dollar(self, depth: int) -> str:
        choice = self.random.randrange(12)
        if choice == 0:
            return self.random.choice(["$", "$$", "$x", "$u", "$e", "$1", "$#", "$@", "$*", "$-"])
        if choice == 1:  # $$ followed by what looks like ${...}
            return "$${" + self.inner(depth) + self.random.choice(["}", ""])
        if choice == 2:
            return self.random.choice(["${x}", "${#x}", "${#}", "${##}", "${x:}", "${}", "${", "}"])
        if choice in (3, 4, 5):  # parameters with operators (x set, e empty, u unset)
            name = self.random.choice(["x", "x", "e", "u"])
            operator = self.operator()
            if name != "x" and operator in ("=", ":=", "?", ":?"):
                operator = "-"  # nothing assigned, no error that ends the line
            return "${" + name + operator + self.inner(depth) + "}"
        if choice in (6, 7):
            return "$(" + self.sequence(depth + 1, self.random.randint(1, 4), command=True) + ")"
        if choice == 8:
            return self.random.choice(["$((1+2))", "$(( 1 ))", "$((", "$(", "$((1)", "$(($#))"])
        if choice == 9:
            return "$" + self.random.choice(["'", '"', "{x", "(", "\\\n"])
        if choice == 10:
            return '"$(' + self.sequence(depth + 1, self.random.randint(1, 3), command=True) + ')"'
        return "${x-$(" + self.sequence(depth + 1, 2, command=True) + ")}"

    def backquote(self, depth: int) -> str:
        inner = self.sequence(depth + 1, self.random.randint(1, 4), command=True)
        choice = self.random.randrange(4)
        if choice == 0:
            return "`" + inner.replace("`", "") + "`"
        if choice == 1:  # nested, escaped
            nested = self.sequence(depth + 2, 2, command=True).replace("`", "")
            return "`" + self.random.choice(SUCCEED + FAIL) + " \\`" + nested + "\\``"
        if choice == 2:
            return '"`' + inner.replace("`", "") + '`"'
        return "`"

    def escape(self, depth: int) -> str:
        choices = ["\\\\", "\\;", "\\'", '\\"', "\\$", "\\`", "\\\n", "\\ ", "\\}", "\\{", "\\|"]
        return self.random.choice([*choices, "\\&", "\\#", "\\(", "\\)", "\\"])

    def redirect(self, depth: int) -> str:
        choices = [">/dev/null", "2>&1", ">&2", "<&-", "> o.log", ">>o.log", "<o.log", "2>"]
        choices += ["<<E", "<<'E'", "<<-E", "\nE\n", "<>o.log", ">&o", ">|/dev/null", "3<&0"]
        choices += ["2>/dev/null", "</dev/null", ">&-", "<<", "\n\tE\n"]
        return self.random.choice(choices)

    def group(self, depth: int) -> str:
        choice = self.random.randrange(6)
        if choice == 0:
            return "(" + self.sequence(depth + 1, self.random.randint(1, 4), command=True) + ")"
        if choice == 1:
            return "{ " + self.sequence(depth + 1, self.random.randint(1, 3), command=True) + "; }"
        return self.random.choice(["(", ")", "{", "}"])

    def keyword(self, depth: int) -> str:
        choice = self.random.randrange(6)
        if choice == 0:
            condition = self.sequence(depth + 1, 2, command=True)
            body = self.sequence(depth + 1, 2, command=True)
            return f"if {condition}; then {body}; fi"
        if choice == 1:
            return f"for v in a b; do {self.sequence(depth + 1, 2, command=True)}; done"
        if choice == 2:
            pattern = self.random.choice(["a", "*", "(a|b", "a|b"])
            body = self.sequence(depth + 1, 2, command=True)
            return f"case $x in {pattern}) {body};; esac"
        return self.random.choice(["if", "then", "else", "fi", "for", "in", "do", "done"])

    def comment(self, depth: int) -> str:
        return self.random.choice(["#", "# c;", "#x", " #", "#\\"])

    def assignment(self, depth: int) -> str:
        return self.random.choice(["v=1", "w=$x", "v='a b'", "v=$(ls)", "w="])


def admissible(line: str) -> bool:
    """Nothing in the line can define a function, loop for ever, change the
    shell running the test, or run the test's own script."""
    if re.search(r"\((?:\s|\\\n)*\)", line) or "$0" in line or "${0" in line or "__" in line:
        return False
    bare = re.sub(r"[\"'\\]", "", line)
    if FORBIDDEN.intersection(re.findall(r"[A-Za-z_]+", bare)):
        return False
    return not re.search(r"(^|[\s;&|()<>`$])[.:\[](?=$|[\s;&|()<>`])", bare)


# The doubts that say sh refuses the line.
REFUSED = {UNCLOSED, UNBALANCED, SYNTAX_ERROR}


def quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


class Traces:
    """What one dash process ran, by run number: each trace is the words
    dash printed for one command, as written."""

    def __init__(self) -> None:
        self.by_tag: dict[int, Counter[str]] = {}
        self.refused: set[int] = set()  # the runs dash refused with a syntax error

    def of(self, tag: int) -> Counter[str]:
        return self.by_tag.get(tag, Counter())


def normalised(words: list[str]) -> str:
    """A trace as compared: the words as dash wrote them, with the line
    number of an error message a command's output carried into them (it
    differs between a line and its part run alone) left out, and so the run
    number of a trace sent into a substitution's output by ``2>&1``."""
    joined = re.sub(r"(\.sh:\s+)\d+:", r"\1N:", "".join(words))
    return re.sub(r"\+\d+ ", "+T ", joined)  # a trace that 2>&1 carried into a word


def run_dash(runs: list[str], workdir: Path) -> Traces:
    """Run each text of ``runs`` in its own subshell with tracing (run
    number = index) and collect what each ran (see the module docstring)."""
    script = ["PS4='+${__t} '", "set -- p1 'p 2'", "x=X e=", "unset u"]
    # Their bodies' own trace goes nowhere (it could end up in a word through 2>&1).
    script += [f"{name}() {{ return 0; }} 2>/dev/null" for name in SUCCEED]
    script += [f"{name}() {{ return 1; }} 2>/dev/null" for name in FAIL]
    script += ['/bin/rmdir -- "$PWD" || exit 3', "PATH=/nonexistent"]
    for tag, text in enumerate(runs):
        # The marker tells which run a syntax error message is about.
        script.append(
            f"__t={tag}; printf '@@%s\\n' {tag} >&2; ( eval {quoted('set -x' + chr(10) + text)} )"
        )
    script.append("printf '%s\\n' @@end >&2")  # the script ran to its end
    path = workdir / f"runs-{os.getpid()}.sh"
    path.write_text("\n".join(script) + "\n")
    cwd = workdir / "cwd"
    cwd.mkdir()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    ours.settimeout(TIMEOUT_S)
    assert DASH is not None
    process = subprocess.Popen(
        [DASH, str(path)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=theirs.fileno(),
    )
    theirs.close()
    traces = Traces()
    ended = False
    run = -1
    open_traces: dict[int, tuple[int, list[str]]] = {}
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for pid, data in messages(ours, deadline):
            text = data.decode("utf-8", "surrogateescape")
            current = open_traces.get(pid)
            start = re.fullmatch(r"\+(\d+) ", text)
            if current is None:
                ended = ended or text == "@@end\n"
                if marker := re.fullmatch(r"@@(\d+)\n", text):
                    run = int(marker.group(1))
                elif text.startswith("Syntax error") and "Bad fd number" not in text:
                    traces.refused.add(run)  # (that one is said when >&word runs)
                if start is not None:
                    open_traces[pid] = (int(start.group(1)), [])
                continue  # an error message, or output sent to stderr
            if text == "\n":
                tag, words = open_traces.pop(pid)
                if words:  # a command of redirects alone runs nothing
                    traces.by_tag.setdefault(tag, Counter())[normalised(words)] += 1
            else:
                current[1].append(text)
    finally:
        ours.close()
        if process.poll() is None:
            process.kill()
        process.wait()
    assert ended, f"the dash running the lines stopped before their end ({process.returncode})"
    return traces


def messages(sock: socket.socket, deadline: float) -> Iterator[tuple[int, bytes]]:
    """Each message written to the socket, with the pid that wrote it, until
    every process holding the other end has closed it."""
    space = socket.CMSG_SPACE(struct.calcsize("iII"))
    while True:
        if time.monotonic() > deadline:
            raise AssertionError(f"dash did not finish the lines in {TIMEOUT_S} s")
        data, ancillary, _, _ = sock.recvmsg(1 << 16, space)
        if not data:
            return
        pid = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[: struct.calcsize("iII")])[0]
        yield pid, data


def disagreements(
    line: str, split: CommandSplit, traces: Traces, tags: dict[str, int]
) -> list[str]:
    """What dash did with ``line`` that its split does not account for (A,
    B and C of the module docstring)."""
    found: list[str] = []
    ran = traces.of(tags[line])
    part_traces = [traces.of(tags[command.text]) for command in split.commands]
    seen = set().union(*part_traces) if part_traces else set()
    for trace in ran:
        if trace not in seen:
            found.append(f"A: dash ran {trace!r}, which no part runs")
    refused = tags[line] in traces.refused
    if refused and not REFUSED.intersection(split.doubts):
        found.append(f"C: dash refuses the line, the split does not say so ({split.doubts})")
    for index, command in enumerate(split.commands):
        if refused:
            break  # sh runs nothing past the error; parts read on are for deny rules
        held = set().union(*(part_traces[inner] for inner in nested(split, index)))
        own = [trace for trace in part_traces[index].elements() if trace not in held]
        if len(own) > 1:
            found.append(f"B: the part {command.text!r} alone runs {own!r}")
    return found


def nested(split: CommandSplit, index: int) -> list[int]:
    """The parts held by part ``index``, and those they hold, and so on (a
    here document's commands are held by the command it feeds, whose text
    alone does not run them)."""
    held = [i for i, command in enumerate(split.commands) if command.holder == index]
    return held + [deeper for inner in held for deeper in nested(split, inner)]


def test_the_splitter_agrees_with_dash_on_generated_lines(tmp_path: Path) -> None:
    generator = Generator(SEED)
    distinct: dict[str, None] = {}
    while len(distinct) < LINES:
        distinct[generator.line()] = None
    lines = list(distinct)
    started = time.monotonic()
    splits = {line: split_command(line) for line in lines}
    split_s = time.monotonic() - started

    def check(first: int) -> list[str]:
        batch = lines[first : first + BATCH]
        runs = list(
            dict.fromkeys(batch + [c.text for line in batch for c in splits[line].commands])
        )
        tags = {text: tag for tag, text in enumerate(runs)}
        workdir = tmp_path / f"batch{first}"
        workdir.mkdir()
        traces = run_dash(runs, workdir)
        return [
            f"{line!r}\n    parts {list(splits[line].parts)!r}\n    {problem}"
            for line in batch
            for problem in disagreements(line, splits[line], traces, tags)
        ]

    with ThreadPoolExecutor(max_workers=2) as pool:  # two dash processes at a time
        failures = [
            failure for found in pool.map(check, range(0, len(lines), BATCH)) for failure in found
        ]
    elapsed = time.monotonic() - started
    uncertain = [split for split in splits.values() if not split.certain]
    reasons = Counter(doubt for split in uncertain for doubt in split.doubts)
    certain = len(lines) - len(uncertain)
    well_formed = [line for line in lines if line in generator.well_formed]
    certain_well_formed = sum(splits[line].certain for line in well_formed)
    print(
        f"\n{len(lines)} distinct lines (seed {SEED}) split ({split_s:.1f} s) and run by dash "
        f"in {elapsed:.1f} s: {certain} certain, {len(uncertain)} uncertain; of the "
        f"{len(well_formed)} made well-formed, {certain_well_formed} certain"
    )
    for reason, count in reasons.most_common():
        print(f"    {count:6}  {reason}")
    assert not failures, f"{len(failures)} disagreements with dash:\n" + "\n".join(failures[:40])
    # Not uselessly conservative: the well-formed lines that are uncertain
    # hold a substitution, a redirect to a file, a here document or quotes
    # the shells read apart, and the rest is certain (about 42% of them).
    assert certain_well_formed >= 0.35 * len(well_formed)


SHELL = builtin_tool("shell")
COMMON = [
    "git status",
    "git status --short",
    "ls -la | grep x",
    "npm test && echo ok",
    'pytest -k "a or b"',
    "pytest -q tests/llm 2>&1 | tail -n 20",
    "git diff HEAD~1 -- docs/*.md",
    "make -j4 >/dev/null 2>&1 || echo failed",
    "cd sub && ls",
    "grep -rn 'def main' src | head",
    "# list the tree\nls -R",
    "if git diff --quiet; then echo clean; else echo dirty; fi",
    "for f in a b; do wc -l $f; done",
    "python3 -c 'print(1)'",
    'echo "${HOME:-/root}" $$',
]


@pytest.mark.parametrize("line", COMMON)
def test_common_real_commands_stay_certain_and_allowable(line: str) -> None:
    split = split_command(line)
    assert split.certain, split.doubts
    assert SHELL is not None
    rules = [PermissionRule(tool="shell", pattern="*", action="allow")]
    assert evaluate(rules, SHELL, command_target(line)).action == "allow"
