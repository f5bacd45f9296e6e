"""A shell command line cut into the simple commands ``/bin/sh`` would run,
for the permission rules of the ``shell`` tool (:mod:`oma_host.llm.permissions`).

A rule's pattern is matched against each simple command on its own, so an
``allow`` for ``git status*`` cannot be talked into ``git status && touch
pwned``. :func:`split_command` reads the line as POSIX sh does where it
matters for that: quotes (``'...'``, ``"..."`` and backslashes) keep what
they hold in one word, so ``echo "a && b"`` is one command; the operators
``&&``, ``||``, ``;``, ``|``, ``&`` and a newline end a command; a subshell's
``( ... )`` and a command substitution's ``$( ... )`` or backquotes hold
commands of their own, which are parts too (``${ ... }`` holds one word).

Each part is the command's text as written (trimmed), so a pattern is
written as the command is typed. The split is *certain* only when nothing in
the line runs or touches more than its parts say; otherwise it gives the
reasons, and no ``allow`` rule with a pattern applies to the line (the policy
asks). Uncertain are: a command substitution (its output becomes the outer
command's words), a redirect to or from a file (``>``, ``>>``, ``<``, a here
document, ``<( ... )``), a comment (``#``, where readers of the line part
ways), ``$'...'`` quoting (which ``dash`` and ``bash`` read differently),
and anything unbalanced: a quote, a parenthesis, a backquote, a trailing
backslash. Two redirects are kept as harmless and left out of a part's text:
a descriptor duplicated or closed (``2>&1``, ``>&2``, ``<&-``) and output
sent to ``/dev/null`` (``>/dev/null``, ``2>> /dev/null``). Everything found
inside the line, also what an uncertain split holds, is a part, so a ``deny``
rule still sees every command (``echo $(rm -rf x)`` has the part ``rm -rf x``).

Over-splitting is safe here (each piece must then be allowed on its own);
what must never happen is a piece that sh would run being hidden inside
another, so when unsure the reader splits, or says it is unsure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# What ends a simple command in a list (one character at a time: ``&&`` is two
# ends with nothing between them).
_ENDS = frozenset(";&|\n")
# Characters before which a word starts (for ``#`` and a redirect's descriptor number).
_WORD_BREAKS = frozenset(" \t\n;&|()<>")
# The harmless redirects, matched where the descriptor number (or the
# operator) starts: a descriptor duplicated or closed, or output to /dev/null.
_HARMLESS_REDIRECT = re.compile(r"[0-9]*(?:[<>]&(?:[0-9]+|-)|>>?[ \t]*/dev/null)(?=$|[ \t\n;&|()])")


@dataclass(frozen=True)
class CommandSplit:
    """What :func:`split_command` found: the simple commands' texts (in the
    order they start; nested ones after the command that holds them begins)
    and why the split is not certain (empty: it is)."""

    parts: tuple[str, ...]
    doubts: tuple[str, ...] = ()

    @property
    def certain(self) -> bool:
        return not self.doubts


@dataclass
class _List:
    """A list of commands being read: the whole line, a subshell, or a
    command substitution. ``closer``: what ends it (None: the end of the line)."""

    closer: str | None
    start: int  # where the command being read starts
    cut: list[tuple[int, int]] = field(default_factory=list)  # harmless redirects in it
    # A substitution's text stays in the command holding it; a subshell's does not.
    substitution: bool = False


class _Reader:
    """One pass over the line with a stack of what is open (see the module docstring)."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.found: list[tuple[int, str]] = []  # (start, text) of each part
        self.doubts: dict[str, None] = {}  # ordered, once each
        # Open lists and quotes: a _List, '"' (double quotes) or "{" (a ${...} word).
        self.stack: list[_List | str] = [_List(None, 0)]

    def doubt(self, why: str) -> None:
        self.doubts.setdefault(why, None)

    def end_part(self, at: int) -> None:
        """The command being read in the innermost list ends at ``at``."""
        current = self.stack[-1]
        assert isinstance(current, _List)
        text, position = [], current.start
        for start, end in current.cut:
            text.append(self.line[position:start])
            position = end
        text.append(self.line[position:at])
        part = "".join(text).strip()
        if part:
            self.found.append((current.start, part))
        current.start, current.cut = at + 1, []

    def word_starts(self, at: int) -> bool:
        return at == 0 or self.line[at - 1] in _WORD_BREAKS

    def read(self) -> CommandSplit:
        line, i = self.line, 0
        while i < len(line):
            top = self.stack[-1]
            if top == '"':
                i = self._in_double_quotes(i)
            elif top == "{":
                i = self._in_parameter(i)
            else:
                assert isinstance(top, _List)
                i = self._in_list(i, top)
        if len(self.stack) > 1:
            self.doubt("an unclosed quote, parenthesis or substitution")
            while len(self.stack) > 1:  # keep what the open lists hold, for deny rules
                open_list = self.stack[-1]
                if isinstance(open_list, _List):
                    self.end_part(len(line))
                self.stack.pop()
                outer = self.stack[-1]
                if isinstance(open_list, _List) and not open_list.substitution:
                    assert isinstance(outer, _List)  # a subshell opens in a list only
                    outer.start = len(line)  # its text is its own parts
        self.end_part(len(line))
        parts = tuple(text for _, text in sorted(self.found, key=lambda found: found[0]))
        return CommandSplit(parts or (line.strip(),), tuple(self.doubts))

    # -- one step in each context; each returns where to go on ------------------

    def _quoted(self, i: int) -> int | None:
        """Past a backslash's pair, or a single-quoted string; None for neither."""
        line = self.line
        if line[i] == "\\":
            if i + 1 >= len(line):
                self.doubt("a trailing backslash")
            return i + 2
        if line[i] == "'":
            end = line.find("'", i + 1)
            if end == -1:
                self.doubt("an unclosed quote, parenthesis or substitution")
                return len(line)
            return end + 1
        return None

    def _dollar(self, i: int) -> int | None:
        """A ``$(``, ``${`` or ``$'`` opened at ``i``: where to go on; None for none."""
        following = self.line[i + 1 : i + 2]
        if following == "(":
            self.doubt("a command substitution")
            self.stack.append(_List(")", i + 2, substitution=True))
            return i + 2
        if following == "{":
            self.stack.append("{")
            return i + 2
        if following == "'":
            self.doubt("$'...' quoting")
            return None
        return None

    def _backquote(self, i: int) -> int:
        top = self.stack[-1]
        if isinstance(top, _List) and top.closer == "`":
            self.end_part(i)
            self.stack.pop()
            return i + 1
        self.doubt("a command substitution")
        self.stack.append(_List("`", i + 1, substitution=True))
        return i + 1

    def _in_double_quotes(self, i: int) -> int:
        char = self.line[i]
        if char == "\\":
            return i + 2
        if char == '"':
            self.stack.pop()
            return i + 1
        if char == "`":
            return self._backquote(i)
        if char == "$" and (moved := self._dollar(i)) is not None:
            return moved
        return i + 1

    def _in_parameter(self, i: int) -> int:
        char = self.line[i]
        if (moved := self._quoted(i)) is not None:
            return moved
        if char == "}":
            self.stack.pop()
            return i + 1
        if char == '"':
            self.stack.append('"')
            return i + 1
        if char == "`":
            return self._backquote(i)
        if char == "$" and (moved := self._dollar(i)) is not None:
            return moved
        return i + 1

    def _in_list(self, i: int, top: _List) -> int:
        line, char = self.line, self.line[i]
        if (moved := self._quoted(i)) is not None:
            return moved
        if char == '"':
            self.stack.append('"')
            return i + 1
        if char == "`":
            return self._backquote(i)
        if char == "$" and (moved := self._dollar(i)) is not None:
            return moved
        if char == "#" and self.word_starts(i):
            self.doubt("a comment")
            return i + 1
        if char.isdigit() and self.word_starts(i):
            # A descriptor number before a redirect (2>&1) belongs to it.
            digits = i
            while digits < len(line) and line[digits].isdigit():
                digits += 1
            if digits < len(line) and line[digits] in "<>":
                return self._redirect(i, top)
            return digits
        if char in "<>":
            return self._redirect(i, top)
        if char == "(":
            self.end_part(i)
            self.stack.append(_List(")", i + 1))
            return i + 1
        if char == ")":
            if top.closer != ")":
                self.doubt("an unbalanced parenthesis")
                self.end_part(i)
                return i + 1
            self.end_part(i)
            self.stack.pop()
            outer = self.stack[-1]
            if isinstance(outer, _List) and not top.substitution:
                outer.start = i + 1  # after a subshell, the command goes on without it
            return i + 1
        if char in _ENDS:
            self.end_part(i)
            return i + 1
        return i + 1

    def _redirect(self, i: int, top: _List) -> int:
        """A redirect starting at ``i`` (its descriptor number or operator)."""
        harmless = _HARMLESS_REDIRECT.match(self.line, i)
        if harmless is not None:
            top.cut.append((i, harmless.end()))
            return harmless.end()
        self.doubt("a redirect")
        i += 1
        while i < len(self.line) and self.line[i] in "<>&|":
            i += 1  # the rest of the operator (>>, <<, &>, >|), not a command end
        return i


def split_command(line: str) -> CommandSplit:
    """The simple commands of ``line`` and any doubts (see the module docstring)."""
    if "\0" in line:  # no shell reads past it as we would
        return CommandSplit((line.strip(),), ("a NUL character",))
    return _Reader(line).read()
