"""A shell command line cut into the simple commands ``/bin/sh`` would run.

Each simple command is matched on its own, so an ``allow`` for ``git status*``
cannot be talked into ``git status && touch pwned``. The reader follows dash's
parser (``tests/llm/test_command_line_dash.py`` checks it against ``dash``). A
split is *certain* only when nothing in the line runs or touches more than its
parts say; otherwise no ``allow`` rule with a pattern applies. Each part also
has its *forms* for ``deny`` and ``ask`` rules (:attr:`Command.forms`), and
what the line cannot tell is in :attr:`Command.unknown`. When unsure it splits
more: over-splitting is safe.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

# -- what the policy gets ------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One simple command of a line: its text as written (harmless redirects
    left out), the index of the part whose word holds it (a command
    substitution's command; None at the top), its normalised forms for
    ``deny``/``ask`` rules, and why what it runs cannot be known (None: it can)."""

    text: str
    holder: int | None = None
    forms: tuple[str, ...] = ()
    unknown: str | None = None


@dataclass(frozen=True)
class CommandSplit:
    """What :func:`split_command` found: the simple commands (in the order
    they start; nested ones after the command that holds them begins) and
    why the split is not certain (empty: it is)."""

    commands: tuple[Command, ...]
    doubts: tuple[str, ...] = ()

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(command.text for command in self.commands)

    @property
    def certain(self) -> bool:
        return not self.doubts


def split_command(line: str) -> CommandSplit:
    """The simple commands of ``line`` and any doubts (see the module docstring)."""
    if "\0" in line:  # no shell reads past it as we would
        return CommandSplit((Command(line.strip()),), ("a NUL character",))
    return _split(line, 0)


# The doubts said for sh's syntax errors.
UNCLOSED = "an unclosed quote, parenthesis or substitution"
UNBALANCED = "an unbalanced parenthesis"
SYNTAX_ERROR = "a syntax error (sh would refuse the line)"
TOO_DEEP = "a line nested too deeply to read"
# How deep lists may nest in one line (subshells, groups, substitutions).
_MAX_NESTING = 40
# Doubts about how the line reads, which make a command string run by a
# shell (``sh -c``, ``eval``) unknowable; the others (a redirect, a
# substitution) are about what the commands do.
_READING_DOUBTS = frozenset(
    {
        UNCLOSED,
        UNBALANCED,
        SYNTAX_ERROR,
        "$'...' quoting",
        "quotes inside a double-quoted ${...}",
        "an alias",
        "a trailing backslash",
        "a backquoted command sh reads only in part",
        "a ${...} sh cannot expand",
        "a NUL character",
        TOO_DEEP,
    }
)
# ... and for a command line another shell than dash may run (bash -c, su -c,
# watch), arithmetic too: bash reads $((a); (b)) as commands.
_OTHER_SHELL_DOUBTS = _READING_DOUBTS | {"an arithmetic expansion"}
# How deep command strings in command strings are followed.
_MAX_DEPTH = 6


def _split(line: str, depth: int) -> CommandSplit:
    found = _Found()
    try:
        _Parser(found, _Source(line), (), depth).parse_line()
    except (_TooDeep, RecursionError):
        # What it holds cannot be known: the whole line is a part, for deny rules.
        found.doubt(TOO_DEEP)
        found.records.append(_Record((len(line),), line.strip(), unknown=TOO_DEEP))
    records = sorted(found.records, key=lambda record: record.key)
    index = {id(record): position for position, record in enumerate(records)}
    commands = tuple(
        Command(
            record.text,
            None if record.holder is None else index.get(id(record.holder)),
            record.forms,
            record.unknown,
        )
        for record in records
    )
    return CommandSplit(commands or (Command(line.strip()),), tuple(found.doubts))


# -- dash's reader ---------------------------------------------------------------

EOF = ""  # what the source gives at its end

# checkkwd flags (parser.h)
_CHKKWD = 2
_CHKNL = 4
_CHKEOFMARK = 8

_KEYWORDS = frozenset(
    {"!", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then"}
    | {"until", "while", "{", "}"}
)
# Tokens that end a list (tokendlist in mktokens).
_LIST_ENDS = frozenset({"EOF", ")", ";;", "do", "done", "elif", "else", "esac", "fi", "then", "}"})
# dash's special builtins: no function may have their names.
_SPECIAL_BUILTINS = frozenset(
    {".", ":", "break", "continue", "eval", "exec", "exit", "export", "local", "readonly"}
    | {"return", "set", "shift", "times", "trap", "unset"}
)

# Character classes of the four syntax tables (mksyntax.c); anything else is a
# plain character ("word").
_BASE = {
    "\n": "nl",
    "\\": "back",
    "'": "squote",
    '"': "dquote",
    "`": "bquote",
    "$": "var",
    "}": "endvar",
} | dict.fromkeys("<>();&| \t", "special")
_DQ = {"\n": "nl", "\\": "back", '"': "endquote", "`": "bquote", "$": "var", "}": "endvar"}
_SQ = {"\n": "nl", "'": "endquote"}
_ARI = {"\n": "nl", "\\": "back", "`": "bquote", "$": "var", "}": "endvar", "(": "lp", ")": "rp"}
_TABLES = {"base": _BASE, "dq": _DQ, "sq": _SQ, "ari": _ARI}

# ${...} types (parser.h)
_VSNORMAL = 0x1
_VSTRIMRIGHT = 0x6
_VSTRIMLEFT = 0x8
_VSLENGTH = 0xA
_VSNUL = 0x10


def _is_name_start(c: str) -> bool:
    return c == "_" or ("a" <= c <= "z") or ("A" <= c <= "Z")


def _is_in_name(c: str) -> bool:
    return _is_name_start(c) or ("0" <= c <= "9")


def _is_digit(c: str) -> bool:
    return c != EOF and "0" <= c <= "9"


def _is_special(c: str) -> bool:
    return c != EOF and (c in "#?$!-*@" or _is_digit(c))


def _is_name(text: str) -> bool:
    return bool(text) and _is_name_start(text[0]) and all(_is_in_name(c) for c in text)


class _SyntaxError(Exception):
    """sh would refuse the line: ``reason`` (a doubt), found at ``at`` (where
    the offending token starts); reading may go on at ``resume``."""

    def __init__(self, reason: str, at: int, resume: int) -> None:
        super().__init__(reason)
        self.reason, self.at, self.resume = reason, at, resume


class _TooDeep(Exception):
    """The line nests deeper than :data:`_MAX_NESTING`: it is not read on."""


class _Source:
    """The text being read, with dash's push-back of the last characters
    read (``pgetc``, ``pgetc_eatbnl``, ``pungetc``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self._back: deque[int] = deque(maxlen=4)

    def getc(self) -> str:
        pos = self.pos
        self._back.append(pos)
        if pos >= len(self.text):
            return EOF
        self.pos = pos + 1
        return self.text[pos]

    def getc_eatbnl(self) -> str:
        """The next character, backslash-newline pairs skipped."""
        while True:
            c = self.getc()
            if c != "\\":
                return c
            if self.getc() != "\n":
                self.ungetc()
                return c

    def ungetc(self) -> None:
        self.pos = self._back.pop()

    def mark_read(self, at: int) -> None:
        """Go back to ``at`` (just after a character now read again)."""
        self.pos = at
        self._back.append(at - 1 if at > 0 else at)


@dataclass
class _Frame:
    """One level of dash's syntax stack (``struct synstack``)."""

    syntax: str
    innerdq: bool = False
    varpushed: bool = False
    dblquote: bool = False
    varnest: int = 0
    parenlevel: int = 0
    dqvarnest: int = 0


# A word's pieces: ("c", character, quoted), ("q", "", True) for a quote mark,
# ("x", kind, False) for an expansion (its text is not the word's).
_Item = tuple[str, str, bool]


@dataclass(eq=False)
class _Word:
    """A word as dash reads it, with what the policy needs of it."""

    items: list[_Item] = field(default_factory=list)
    quoted: int = 0  # dash's quoteflag: escapes and closing quotes seen
    raw: str = ""  # the text as written
    subs: list[_Record] = field(default_factory=list)  # commands substituted in it

    def plain(self) -> str | None:
        """The text, when the word is only unquoted characters (a keyword, a name)."""
        if self.quoted or any(kind != "c" or quoted for kind, _, quoted in self.items):
            return None
        return "".join(c for _, c, _ in self.items)

    def literal(self) -> str:
        """The characters with quotes removed (a here document's delimiter)."""
        return "".join(c for kind, c, _ in self.items if kind == "c")

    @cached_property
    def value(self) -> str | None:
        """What the word expands to, when no expansion, tilde or pattern is in it."""
        if self.glob or any(kind == "x" for kind, _, _ in self.items) or self._tilde():
            return None
        return self.literal()

    @property
    def shown(self) -> str:
        value = self.value
        return self.raw if value is None else value

    @cached_property
    def glob(self) -> bool:
        """Whether pathname (or bash's brace) expansion may make other words of it."""
        unquoted = "".join(
            c if kind == "c" and not quoted else " " for kind, c, quoted in self.items
        )
        if "*" in unquoted or "?" in unquoted or re.search(r"\[.*\]", unquoted):
            return True
        return re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", unquoted) is not None  # {rm,-rf,x}

    def _tilde(self) -> bool:
        return bool(self.items) and self.items[0] == ("c", "~", False)

    def command_name(self) -> str | None:
        """The name a command word runs (a path's last component), when known."""
        if self.glob:
            return None
        items = self.items
        slash = max(
            (i for i, item in enumerate(items) if item[0] == "c" and item[1] == "/"), default=-1
        )
        if slash == -1 and self._tilde():
            return None
        tail = items[slash + 1 :]
        if any(kind == "x" for kind, _, _ in tail):
            return None
        name = "".join(c for kind, c, _ in tail if kind == "c")
        return name or self.value

    def is_assignment(self) -> bool:
        """dash's ``isassignment``: an unquoted name and ``=`` begin it."""
        for index, (kind, c, quoted) in enumerate(self.items):
            if kind != "c" or quoted:
                return False
            if c == "=":
                return index > 0
            if not (_is_in_name(c) if index else _is_name_start(c)):
                return False
        return False


@dataclass(eq=False)
class _Redirect:
    kind: str  # ">", ">>", ">|", ">&", "<", "<<", "<&", "<>"
    start: int
    end: int = 0
    harmless: bool = False
    target: _Word | None = None


@dataclass(eq=False)
class _Heredoc:
    striptabs: bool
    owner: _Record | None = None
    delimiter: str = ""
    quoted: bool = False


@dataclass(eq=False)
class _Token:
    kind: str
    start: int
    end: int
    word: _Word | None = None


@dataclass(eq=False)
class _Record:
    """A simple command found (or begun, when sh refuses the line)."""

    key: tuple[int, ...]
    text: str = ""
    holder: _Record | None = None
    forms: tuple[str, ...] = ()
    unknown: str | None = None


@dataclass(eq=False)
class _Reading:
    """A simple command being read: its words and its tokens' spans
    (start, end, whether a harmless redirect)."""

    record: _Record
    words: list[_Word] = field(default_factory=list)
    spans: list[tuple[int, int, bool]] = field(default_factory=list)

    @property
    def start(self) -> int:
        return self.record.key[-1]


class _Found:
    """What one split collects: the commands, the doubts, and for each
    substitution being read the commands directly in it."""

    def __init__(self) -> None:
        self.records: list[_Record] = []
        self.doubts: dict[str, None] = {}
        self.collectors: list[list[_Record]] = [[]]
        self.nesting = 0  # lists being read inside one another

    def doubt(self, why: str) -> None:
        self.doubts.setdefault(why, None)

    def add(self, record: _Record) -> None:
        self.records.append(record)
        self.collectors[-1].append(record)


class _Parser:
    """dash's parser over one source (the line, or a backquoted command's
    text), recording each simple command it reads into ``found``."""

    def __init__(self, found: _Found, src: _Source, key: tuple[int, ...], depth: int) -> None:
        self.found = found
        self.src = src
        self.key = key
        self.depth = depth
        self.checkkwd = 0
        self.tokpushback = False
        self.last = _Token("EOF", 0, 0)
        self.redirect: _Redirect | None = None
        self.heredoc: _Heredoc | None = None
        self.heredocs: list[_Heredoc] = []
        # The simple commands being read.
        self.building: list[_Reading] = []
        self.resumed = 0  # where reading last went on after a syntax error
        self.leftover = False  # reading what sh leaves unread in backquotes

    # -- the whole line, going on past what sh refuses -----------------------

    def parse_line(self) -> None:
        """``evalstring``: one list at a time until the end; after a syntax
        error (sh stops there), the rest is read as well for deny rules."""
        while True:
            try:
                self.tokpushback, self.checkkwd, self.heredocs = False, 0, []
                self.parse_list(1)
                if self.last.kind == "EOF":
                    return
            except _SyntaxError as error:
                self.recover(error)
                if self.src.pos >= len(self.src.text):
                    return

    def recover(self, error: _SyntaxError) -> None:
        """After a syntax error: the commands cut short are parts too, and
        reading goes on past the offending token."""
        if not self.leftover:  # (sh never reads a backquoted text's leftover)
            self.found.doubt(error.reason)
        for reading in reversed(self.building):
            self.finish(reading, reading.words, cut_at=error.at)
        self.building = []
        resume = max(error.resume, self.src.pos, self.resumed + 1)  # nothing is read twice
        self.resumed = resume
        self.src.mark_read(min(resume, len(self.src.text)))

    def error(self, expected: str | None = None) -> _SyntaxError:
        """``synexpect``: the token just read was not one the grammar allows."""
        token = self.last
        if token.kind == "EOF":
            return _SyntaxError(UNCLOSED, token.start, token.end)
        if token.kind == ")" and expected is None:
            return _SyntaxError(UNBALANCED, token.start, token.end)
        return _SyntaxError(SYNTAX_ERROR, token.start, token.end)

    # -- the grammar (parser.c: list as parse_list, andor, pipeline, command, simplecmd) ---

    def parse_list(self, nlflag: int) -> None:
        self.found.nesting += 1
        try:
            if self.found.nesting > _MAX_NESTING:
                raise _TooDeep
            self.read_list(nlflag)
        finally:
            self.found.nesting -= 1

    def read_list(self, nlflag: int) -> None:
        chknl = 0 if nlflag & 1 else _CHKNL
        while True:
            self.checkkwd = chknl | _CHKKWD
            tok = self.readtoken()
            if tok == "NL":
                self.parseheredoc()
                return
            if tok == "EOF":
                self.parseheredoc()
                self.tokpushback = True
                return
            self.tokpushback = True
            if nlflag == 2 and tok in _LIST_ENDS:
                return
            nlflag |= 2
            self.andor()
            tok = self.readtoken()
            if tok == "EOF":
                self.parseheredoc()
                self.tokpushback = True
                return
            if tok == "NL":
                self.tokpushback = True
            elif tok not in ("&", ";"):
                if not chknl:
                    raise self.error()
                self.tokpushback = True
                return

    def andor(self) -> None:
        self.pipeline()
        while self.readtoken() in ("&&", "||"):
            self.checkkwd = _CHKNL | _CHKKWD
            self.pipeline()
        self.tokpushback = True

    def pipeline(self) -> None:
        if self.readtoken() == "!":
            self.checkkwd = _CHKKWD
        else:
            self.tokpushback = True
        self.command()
        if self.readtoken() == "|":
            while True:
                self.checkkwd = _CHKNL | _CHKKWD
                self.command()
                if self.readtoken() != "|":
                    break
        self.tokpushback = True

    def command(self) -> None:
        tok = self.readtoken()
        end: str | None = None
        if tok == "if":
            self.parse_list(0)
            self.expect("then")
            self.parse_list(0)
            while self.readtoken() == "elif":
                self.parse_list(0)
                self.expect("then")
                self.parse_list(0)
            if self.last.kind == "else":
                self.parse_list(0)
            else:
                self.tokpushback = True
            end = "fi"
        elif tok in ("while", "until"):
            self.parse_list(0)
            self.expect("do")
            self.parse_list(0)
            end = "done"
        elif tok == "for":
            self.for_clause()
            end = "done"
        elif tok == "case":
            self.case_clause()
        elif tok == "(":
            self.parse_list(0)
            end = ")"
        elif tok == "{":
            self.parse_list(0)
            end = "}"
        elif tok in ("WORD", "REDIR"):
            self.tokpushback = True
            self.simplecmd()
            return
        else:
            raise self.error()
        if end is not None:
            self.expect(end)
        self.checkkwd = _CHKKWD
        while self.readtoken() == "REDIR":
            self.parsefname()
        self.tokpushback = True

    def expect(self, kind: str) -> None:
        if self.readtoken() != kind:
            raise self.error(kind)

    def for_clause(self) -> None:
        word = self.last.word if self.readtoken() == "WORD" else None
        if word is None or word.quoted or not _is_name(word.plain() or ""):
            raise _SyntaxError(SYNTAX_ERROR, self.last.start, self.last.end)
        self.checkkwd = _CHKNL | _CHKKWD
        if self.readtoken() == "in":
            while self.readtoken() == "WORD":
                pass
            if self.last.kind not in ("NL", ";"):
                raise self.error()
        elif self.last.kind != ";":
            self.tokpushback = True
        self.checkkwd = _CHKNL | _CHKKWD
        self.expect("do")
        self.parse_list(0)

    def case_clause(self) -> None:
        if self.readtoken() != "WORD":
            raise self.error()
        self.checkkwd = _CHKNL | _CHKKWD
        self.expect("in")
        self.checkkwd = _CHKNL | _CHKKWD
        tok = self.readtoken()
        while tok != "esac":
            if self.last.kind == "(":
                self.readtoken()
            while self.readtoken() == "|":
                self.readtoken()
            if self.last.kind != ")":
                raise self.error(")")
            self.parse_list(2)
            self.checkkwd = _CHKNL | _CHKKWD
            tok = self.readtoken()
            if tok != "esac":
                if tok != ";;":
                    raise self.error(";;")
                self.checkkwd = _CHKNL | _CHKKWD
                tok = self.readtoken()

    def simplecmd(self) -> None:
        record = _Record((*self.key, self.last.start))
        args: list[_Word] = []
        assigns: list[_Word] = []
        redirects: list[_Redirect] = []
        reading = _Reading(record)
        self.building.append(reading)
        assignments = True
        while True:
            self.checkkwd = 0
            tok = self.readtoken()
            if tok == "WORD":
                word = self.last.word
                assert word is not None
                reading.words.append(word)
                reading.spans.append((self.last.start, self.last.end, False))
                if assignments and word.is_assignment():
                    assigns.append(word)
                else:
                    args.append(word)
                    assignments = False
            elif tok == "REDIR":
                redirect = self.redirect
                assert redirect is not None
                self.parsefname(record)
                if redirect.target is not None:
                    reading.words.append(redirect.target)
                reading.spans.append((redirect.start, redirect.end, redirect.harmless))
                redirects.append(redirect)
            elif tok == "(" and len(args) == 1 and not assigns and not redirects:
                self.building.pop()  # a function's name runs nothing; its body's commands are parts
                self.function(args[0])
                return
            else:
                self.tokpushback = True
                break
        self.building.pop()
        self.finish(reading, args)

    def function(self, name_word: _Word) -> None:
        """``name() command``, as dash checks it."""
        self.expect(")")
        name = name_word.plain()
        if name is None or not _is_name(name) or name in _SPECIAL_BUILTINS:
            raise _SyntaxError(SYNTAX_ERROR, self.last.start, self.last.end)
        self.checkkwd = _CHKNL | _CHKKWD
        self.command()

    def finish(self, reading: _Reading, args: list[_Word], cut_at: int | None = None) -> None:
        """Record a simple command: its tokens as written, harmless
        redirects left out (and, when sh refused the line at ``cut_at``, what
        was read of it until there)."""
        text = self.src.text
        pieces: list[str] = []
        run: tuple[int, int] | None = None
        spans = reading.spans
        first = next((i for i, span in enumerate(spans) if not span[2]), None)
        if first and text[spans[first][0] : spans[first][1]] in _KEYWORDS:
            # Cut, the redirects before it would leave a reserved word first:
            # alone, the text would read otherwise.
            spans = [(start, end, False) for start, end, _ in spans[:first]] + spans[first:]
        for start, end, harmless in spans:
            if harmless:
                if run is not None:
                    pieces.append(text[run[0] : run[1]])
                run = None
            else:
                run = (run[0] if run is not None else start, end)
        if run is not None:
            pieces.append(text[run[0] : run[1]])
        last = reading.spans[-1][1] if reading.spans else reading.start
        if cut_at is not None and cut_at > last:
            pieces.append(text[last:cut_at].strip())
        record = reading.record
        record.text = " ".join(piece for piece in pieces if piece)
        if not record.text:
            return
        for word in reading.words:
            for sub in word.subs:
                sub.holder = record
        if args and args[0].value == "alias":
            self.found.doubt("an alias")
        record.forms, record.unknown = _forms(args, self.depth)
        self.found.add(record)

    # -- tokens (parser.c: readtoken, xxreadtoken, parsefname, parseheredoc) ---

    def readtoken(self) -> str:
        kwd = self.checkkwd
        tok = self.xxreadtoken()
        if kwd & _CHKNL:
            while tok == "NL":
                self.parseheredoc()
                self.checkkwd = 0
                tok = self.xxreadtoken()
        kwd |= self.checkkwd
        self.checkkwd = 0
        word = self.last.word
        if tok == "WORD" and kwd & _CHKKWD and word is not None and not word.quoted:
            plain = word.plain()
            if plain in _KEYWORDS:
                self.last.kind = tok = plain
        return tok

    def xxreadtoken(self) -> str:
        if self.tokpushback:
            self.tokpushback = False
            return self.last.kind
        src = self.src
        while True:
            c = src.getc_eatbnl()
            if c in (" ", "\t"):
                continue
            if c == "#":
                while c not in ("\n", EOF):
                    c = src.getc()
                src.ungetc()
                continue
            break
        start = src.pos - 1 if c != EOF else src.pos
        kind: str | None = None
        if c == "\n":
            kind = "NL"
        elif c == EOF:
            kind = "EOF"
        elif c in "&|;":
            if src.getc_eatbnl() == c:
                kind = c + c
            else:
                src.ungetc()
                kind = c
        elif c in "()":
            kind = c
        if kind is not None:
            self.last = _Token(kind, start, src.pos)
            return kind
        token = self.readword(c, start)
        self.last = token
        return token.kind

    def readword(self, c: str, start: int) -> _Token:
        """A word or a redirect's operator (with its descriptor number)."""
        word, c = self.readtoken1(c, "base", None, False)
        plain = word.plain()
        if c in ("<", ">") and not word.quoted and plain in ("", *"0123456789"):
            self.redirect = self.parseredir(c, start)
            return _Token("REDIR", start, self.src.pos)
        self.src.ungetc()
        word.raw = self.src.text[start : self.src.pos]
        return _Token("WORD", start, self.src.pos, word)

    def parseredir(self, c: str, start: int) -> _Redirect:
        src = self.src
        following = src.getc_eatbnl()
        if c == ">":
            kind = {">": ">>", "|": ">|", "&": ">&"}.get(following, ">")
        else:
            kind = {"<": "<<", "&": "<&", ">": "<>"}.get(following, "<")
        if kind in (">", "<"):
            src.ungetc()
        if kind == "<<":
            striptabs = src.getc_eatbnl() == "-"
            if not striptabs:
                src.ungetc()
            self.heredoc = _Heredoc(striptabs)
        return _Redirect(kind, start)

    def parsefname(self, owner: _Record | None = None) -> None:
        """A redirect's target (or a here document's delimiter); says whether it is harmless."""
        redirect = self.redirect
        assert redirect is not None
        if redirect.kind == "<<":
            self.checkkwd = _CHKEOFMARK
        if self.readtoken() != "WORD":
            raise self.error()
        target = self.last.word
        assert target is not None
        redirect.target, redirect.end = target, self.last.end
        if redirect.kind == "<<":
            heredoc = self.heredoc
            assert heredoc is not None
            heredoc.delimiter, heredoc.quoted, heredoc.owner = (
                target.literal(),
                bool(target.quoted),
                owner,
            )
            self.heredocs.append(heredoc)
            self.found.doubt("a here document")
        elif redirect.kind in (">&", "<&"):
            redirect.harmless = (
                target.value is not None and re.fullmatch(r"[0-9-]", target.value) is not None
            )
        else:
            redirect.harmless = redirect.kind != "<>" and target.value == "/dev/null"
        if not redirect.harmless and redirect.kind != "<<":
            self.found.doubt("a redirect")

    def parseheredoc(self) -> None:
        heredocs, self.heredocs = self.heredocs, []
        for heredoc in heredocs:
            if heredoc.quoted:
                word, _ = self.readtoken1(
                    self.src.getc(), "sq", heredoc.delimiter, heredoc.striptabs
                )
            else:
                word, _ = self.readtoken1(
                    self.src.getc_eatbnl(), "dq", heredoc.delimiter, heredoc.striptabs
                )
            for sub in word.subs:
                sub.holder = heredoc.owner

    # -- a word (parser.c: readtoken1, parsesub, parsebackq, parsearith) -----

    def readtoken1(
        self, c: str, syntax: str, eofmark: str | None, striptabs: bool
    ) -> tuple[_Word, str]:
        """Read a word (or a here document's body when ``eofmark`` is set)
        starting with ``c``; gives it and the character that ended it."""
        src = self.src
        stack = [_Frame(syntax, dblquote=syntax == "dq")]
        word = _Word()
        # For each ${ open: whether it was opened inside double quotes.
        braces: list[bool] = []

        def add(char: str, quoted: bool) -> None:
            """A character of the word's own text (not of an expansion in it)."""
            if len(stack) == 1:
                if not stack[0].varnest and stack[0].syntax != "ari":
                    word.items.append(("c", char, quoted))
            elif not any(frame.varnest or frame.syntax == "ari" for frame in stack):
                word.items.append(("c", char, quoted))

        ended = False
        while not ended:  # a line at a time (a here document's end is checked at each)
            if eofmark is not None:
                c = self.checkend(c, eofmark, striptabs)
            while True:
                top = stack[-1]
                kind = "eof" if c == EOF else _TABLES[top.syntax].get(c, "word")
                if kind == "nl":
                    if top.syntax == "base" and not top.varnest:
                        ended = True
                        break
                    add(c, top.syntax != "base")
                    c = src.getc() if top.syntax == "sq" else src.getc_eatbnl()
                    break  # the next line
                if kind in ("eof", "special") and (kind == "eof" or top.varnest == 0):
                    ended = True
                    break
                self.step(c, kind, stack, word, braces, eofmark, add)
                c = src.getc() if stack[-1].syntax == "sq" else src.getc_eatbnl()
        top = stack[-1]
        if top.syntax == "ari" or (top.syntax != "base" and eofmark is None) or top.varnest:
            raise _SyntaxError(UNCLOSED, src.pos, len(src.text))
        return word, c

    def step(
        self,
        c: str,
        kind: str,
        stack: list[_Frame],
        word: _Word,
        braces: list[bool],
        eofmark: str | None,
        add: Callable[[str, bool], None],
    ) -> None:
        """One character of a word, not one that ends it (readtoken1's switch)."""
        src, top = self.src, stack[-1]
        quote = kind in ("squote", "dquote", "endquote") or (kind == "word" and c == "'")
        if quote and any(braces):  # dash and bash part ways here
            self.found.doubt("quotes inside a double-quoted ${...}")
        if kind == "word":
            add(c, top.syntax != "base")
        elif kind == "back":
            c = src.getc()
            if c == EOF:
                self.found.doubt("a trailing backslash")
                add("\\", True)
                src.ungetc()
                return
            if (
                top.dblquote
                and c not in "\\`$"
                and (c != '"' or (eofmark is not None and not top.varnest))
                and (c != "}" or not top.varnest)
            ):
                add("\\", True)
            add(c, True)
            word.quoted += 1
        elif kind == "squote":
            top.syntax = "sq"
            word.items.append(("q", "", True))
        elif kind == "dquote":
            top.syntax, top.dblquote = "dq", True
            if top.varnest:
                top.innerdq = not top.innerdq
            word.items.append(("q", "", True))
        elif kind == "endquote":
            if eofmark is not None and not top.varnest:
                add(c, True)
                return
            if top.dqvarnest == 0:
                top.syntax, top.dblquote = "base", False
            word.quoted += 1
            if c == '"' and top.varnest:
                top.innerdq = not top.innerdq
            word.items.append(("q", "", True))
        elif kind == "var":
            self.parsesub(stack, word, braces, eofmark)
        elif kind == "endvar":
            if not top.innerdq and top.varnest > 0:
                top.varnest -= 1
                if braces:
                    braces.pop()
                if not top.varnest and top.varpushed:
                    stack.pop()
                elif top.dqvarnest > 0:
                    top.dqvarnest -= 1
            else:
                add(c, top.syntax != "base")
        elif kind == "lp":
            top.parenlevel += 1
        elif kind == "rp":
            if top.parenlevel > 0:
                top.parenlevel -= 1
            elif src.getc_eatbnl() == ")":
                stack.pop()
            else:
                src.ungetc()
        elif kind == "bquote":
            if self.checkkwd & _CHKEOFMARK:
                add(c, top.syntax != "base")
            else:
                self.parsebackq(True, stack, word)
        else:  # a blank or an operator character inside ${...}
            add(c, False)

    def checkend(self, c: str, eofmark: str, striptabs: bool) -> str:
        """At a here document's line start: EOF when the line is its delimiter."""
        src = self.src
        if striptabs:
            while c == "\t":
                c = src.getc()
        mark = src.pos
        current = c
        for expected in eofmark:
            if current != expected:
                break
            current = src.getc()
        else:
            if current in ("\n", EOF):
                return EOF
        src.mark_read(mark)
        return c

    def parsesub(
        self, stack: list[_Frame], word: _Word, braces: list[bool], eofmark: str | None
    ) -> None:
        """After a ``$``: a parameter, a substitution, arithmetic, or a plain ``$``."""
        src = self.src
        top = stack[-1]
        c = src.getc_eatbnl()
        if (
            c == EOF
            or self.checkkwd & _CHKEOFMARK
            or not (c in "({" or _is_name_start(c) or _is_special(c))
        ):
            if c == "'" and top.syntax == "base" and eofmark is None:
                self.found.doubt("$'...' quoting")
            if not any(frame.varnest or frame.syntax == "ari" for frame in stack):
                word.items.append(("c", "$", top.syntax != "base"))
            src.ungetc()
            return
        if c == "(":
            if src.getc_eatbnl() == "(":
                self.found.doubt("an arithmetic expansion")
                word.items.append(("x", "arithmetic", False))
                stack.append(_Frame("ari", dblquote=True))
            else:
                src.ungetc()
                self.parsebackq(False, stack, word)
            return
        word.items.append(("x", "parameter", False))
        newsyn = top.syntax
        subtype = _VSNORMAL
        braced = c == "{"
        if braced:
            c = src.getc_eatbnl()
            subtype = 0
        bad = False
        while True:  # varname:
            if _is_name_start(c):
                c = src.getc_eatbnl()
                while _is_in_name(c):
                    c = src.getc_eatbnl()
            elif _is_digit(c):
                c = src.getc_eatbnl()
                while (subtype <= 0 or subtype >= _VSLENGTH) and _is_digit(c):
                    c = src.getc_eatbnl()
            elif c != "}":
                cc = c
                c = src.getc_eatbnl()
                if not subtype and cc == "#":
                    subtype = _VSLENGTH
                    if c == "_" or (c != EOF and c.isascii() and c.isalnum()):
                        continue
                    cc = c
                    c = src.getc_eatbnl()
                    if cc == "}" or c != "}":
                        src.ungetc()
                        subtype = 0
                        c = cc
                        cc = "#"
                if not _is_special(cc):
                    if subtype == _VSLENGTH:
                        subtype = 0
                    bad = True
            else:
                bad = True
            break
        if bad:
            src.ungetc()
        elif subtype == 0:  # the operator after ${name (it is read, and so is an unknown one)
            if c in ("%", "#"):
                cc = c
                subtype = _VSTRIMLEFT if c == "#" else _VSTRIMRIGHT
                c = src.getc_eatbnl()
                if c == cc:
                    subtype += 1
                else:
                    src.ungetc()
                newsyn = "base"
            else:
                if c == ":":
                    subtype = _VSNUL
                    c = src.getc_eatbnl()
                if c != EOF and c in "}-+?=":
                    subtype |= "}-+?=".index(c) + _VSNORMAL
        else:
            if subtype == _VSLENGTH and c != "}":
                subtype = 0
            src.ungetc()
        if braced and (bad or subtype in (0, _VSNUL, _VSNUL | _VSNORMAL)):
            self.found.doubt("a ${...} sh cannot expand")  # readers disagree on where it ends
        if newsyn == "ari":
            newsyn = "dq"
        if (newsyn != top.syntax or top.innerdq) and subtype != _VSNORMAL:
            stack.append(_Frame(newsyn, varpushed=True, dblquote=newsyn != "base"))
        if subtype != _VSNORMAL:
            inner = stack[-1]
            braces.append(top.dblquote or inner.dblquote)
            inner.varnest += 1
            if inner.dblquote:
                inner.dqvarnest += 1

    def parsebackq(self, oldstyle: bool, stack: list[_Frame], word: _Word) -> None:
        """A command substitution: its commands are parts of their own."""
        self.found.doubt("a command substitution")
        word.items.append(("x", "command", False))
        collector: list[_Record] = []
        self.found.collectors.append(collector)
        try:
            if oldstyle:
                start = self.src.pos - 1
                text = self.backquoted(stack[-1].dblquote)
                inner = _Parser(self.found, _Source(text), (*self.key, start), self.depth)
                try:
                    inner.parse_backquoted()
                except _SyntaxError as error:  # where it is in the text read
                    raise _SyntaxError(error.reason, start, self.src.pos) from None
            else:
                saved, self.heredocs = self.heredocs, []
                self.parse_list(2)
                self.expect(")")
                # dash reads what here documents are still open from an empty
                # input (setinputstring(nullstr)): nothing after the ) is theirs.
                self.heredocs = saved
        finally:
            self.found.collectors.pop()
        word.subs.extend(collector)

    def backquoted(self, dblquote: bool) -> str:
        """The text between backquotes, its backslashes read as sh does."""
        src = self.src
        text: list[str] = []
        while True:
            c = src.getc_eatbnl()
            if c == "`":
                return "".join(text)
            if c == EOF:
                raise _SyntaxError(UNCLOSED, src.pos, len(src.text))
            if c == "\\":
                c = src.getc()
                if c == EOF:
                    raise _SyntaxError(UNCLOSED, src.pos, len(src.text))
                if c not in "\\`$" and not (dblquote and c == '"'):
                    text.append("\\")
            text.append(c)

    def parse_backquoted(self) -> None:
        """The commands of a backquoted text: one list, as sh reads it, then
        its here documents (with the token that ended the list still pushed
        back, as in dash); what sh leaves unread after it is read too, under
        a doubt."""
        self.parse_list(2)
        ended = self.last
        self.parseheredoc()
        if ended.kind != "EOF":
            self.found.doubt("a backquoted command sh reads only in part")
            self.src.mark_read(max(self.src.pos, ended.end))
            self.leftover = True
            self.parse_line()


# -- normalised forms for deny rules ------------------------------------------------


@dataclass(frozen=True)
class _Wrapper:
    """A command that runs the command in its arguments (``env rm x``)."""

    with_argument: frozenset[str] = frozenset()  # options taking the next word
    operands: int = 0  # words before the command (timeout's duration)
    assignments: bool = False  # NAME=value words may come before the command
    appends: bool = False  # the command gets more arguments when it runs (xargs)
    shell_string: frozenset[str] = frozenset()  # options whose argument is a command line
    unknowable: frozenset[str] = frozenset()  # options that make the command unknowable


def _options(*names: str) -> frozenset[str]:
    return frozenset(names)


_WRAPPERS: dict[str, _Wrapper] = {
    "builtin": _Wrapper(),
    "busybox": _Wrapper(),
    "catchsegv": _Wrapper(),
    "chroot": _Wrapper(_options("--userspec", "--groups"), operands=1),
    "chrt": _Wrapper(_options("-T", "-P", "-D"), operands=1),
    "command": _Wrapper(),
    "coproc": _Wrapper(),
    "doas": _Wrapper(_options("-u", "-C")),
    "env": _Wrapper(
        _options("-u", "-C", "--unset", "--chdir"),
        assignments=True,
        unknowable=_options("-S", "--split-string"),
    ),
    "exec": _Wrapper(_options("-a")),
    "fakeroot": _Wrapper(_options("-i", "-s")),
    "flock": _Wrapper(
        _options("-w", "-E", "--timeout", "--conflict-exit-code"),
        operands=1,
        shell_string=_options("-c", "--command"),
    ),
    "ionice": _Wrapper(_options("-c", "-n", "--class", "--classdata")),
    "nice": _Wrapper(_options("-n", "--adjustment")),
    "nohup": _Wrapper(),
    "proxychains": _Wrapper(_options("-f")),
    "proxychains4": _Wrapper(_options("-f")),
    "setsid": _Wrapper(),
    "stdbuf": _Wrapper(_options("-i", "-o", "-e", "--input", "--output", "--error")),
    "strace": _Wrapper(
        _options("-o", "-e", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-S", "-X", "-P")
    ),
    "sudo": _Wrapper(
        _options("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "-R")
        | _options("--user", "--group", "--chdir", "--host", "--prompt", "--role", "--type")
        | _options("--close-from", "--command-timeout", "--other-user", "--chroot"),
        assignments=True,
    ),
    "taskset": _Wrapper(operands=1),
    "time": _Wrapper(_options("-f", "-o", "--format", "--output")),
    "timeout": _Wrapper(_options("-s", "-k", "--signal", "--kill-after"), operands=1),
    "torsocks": _Wrapper(_options("-u", "-p", "-a", "-P")),
    "unbuffer": _Wrapper(),
    "xargs": _Wrapper(
        _options("-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s")
        | _options("--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args")
        | _options("--max-procs", "--max-chars", "--process-slot-var"),
        appends=True,
    ),
}
# Shells: ``-c STRING`` runs a command line; with no operand (or ``-s``) they
# read commands from their input. The command lines of those in _READ_SHELLS
# are read as dash reads them (bash's own ways are doubts there); the others
# read theirs otherwise, so what they run cannot be known.
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish"})
_READ_SHELLS = frozenset({"sh", "dash", "ash", "bash"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# A placeholder for the arguments xargs adds when it runs the command.
_APPENDED = "{}"


def _forms(words: list[_Word], depth: int) -> tuple[tuple[str, ...], str | None]:
    """The normalised forms of the command ``words`` run (and of those it
    runs in turn), and why what it runs cannot be known."""
    forms: list[str] = []
    unknown = _command_forms(words, depth, forms)
    return tuple(dict.fromkeys(forms)), unknown


def _command_forms(words: list[_Word], depth: int, forms: list[str]) -> str | None:
    if not words:
        return None
    if depth > _MAX_DEPTH:
        return "commands nested too deeply to follow"
    forms.append(" ".join(word.shown for word in words))
    appended = False
    i = 0
    while i < len(words):
        name = words[i].command_name()
        if name is None:
            return "a command word made of an expansion or a pattern"
        rest = [word.shown for word in words[i + 1 :]]
        forms.append(" ".join([name, *rest]))
        if appended:
            forms.append(" ".join([name, *rest, _APPENDED]))
        special = _special_forms(name, words[i + 1 :], depth, forms)
        if special is not None:
            return special or None
        wrapper = _WRAPPERS.get(name)
        if wrapper is None:
            return None
        i, string, why = _skip_options(words, i + 1, wrapper)
        if why is not None:
            return why
        if string is not None:
            return _string_forms(string, depth, forms)
        appended = appended or wrapper.appends
    return None


def _special_forms(name: str, args: list[_Word], depth: int, forms: list[str]) -> str | None:
    """Forms of commands run by ``eval``, a shell, ``find -exec``, ``trap``,
    ``watch`` or ``su -c``: None when ``name`` is none of them, else why
    they cannot be known ("" when they can)."""
    if name == "command" and any(word.value in ("-v", "-V") for word in args[:2]):
        return ""  # it says what the name is, and runs nothing
    if name == "eval":
        values = [word.value for word in args]
        if any(value is None for value in values):
            return "eval of an expansion"
        return _line_forms(" ".join(value or "" for value in values), depth, forms, True) or ""
    if name in _SHELLS:
        why = _shell_forms(args, depth, forms if name in _READ_SHELLS else [], name != "bash")
        if why is None and name not in _READ_SHELLS and _runs_a_string(args):
            why = f"a command line for {name}, which reads it otherwise"
        return why or ""
    if name == "find":
        why = ""
        for index, word in enumerate(args):
            if word.value in _FIND_EXEC:
                inner = []
                for following in args[index + 1 :]:
                    if following.value in (";", "+"):
                        break
                    inner.append(following)
                why = why or _command_forms(inner, depth + 1, forms) or ""
        return why
    if name == "trap":
        operands = [word for word in args if word.value not in ("--", "-p", "-l")]
        if not operands:
            return ""
        action = operands[0].value
        if action is None:
            return "trap of an expansion"
        if action == "-" or action.isdigit():
            return ""
        return _line_forms(action, depth, forms, True) or ""
    if name == "watch":
        i, _, _ = _skip_options(args, 0, _Wrapper(_options("-n", "-d", "--interval")))
        values = [word.value for word in args[i:]]
        if any(value is None for value in values):
            return "watch of an expansion"
        return _line_forms(" ".join(value or "" for value in values), depth, forms) or ""
    if name in ("su", "runuser"):
        for index, word in enumerate(args):
            if word.value in ("-c", "--command") and index + 1 < len(args):
                return _string_forms(args[index + 1], depth, forms) or ""
        if any(word.value is None for word in args):
            return f"{name} given an expansion"
        return f"{name} starting a shell that reads commands from its input"
    return None


def _skip_options(
    words: list[_Word], i: int, wrapper: _Wrapper
) -> tuple[int, _Word | None, str | None]:
    """Past a wrapper's options (and operands, and NAME=value words): where
    its command starts, a command line given as an option's argument, or
    why the command cannot be known."""
    operands = wrapper.operands
    options = True
    while i < len(words):
        value = words[i].value
        if value is None:
            return i, None, None  # the command word decides (unknown)
        if options and value == "--":
            options = False
        elif options and value.startswith("--") and len(value) > 2:
            option, equals, argument = value.partition("=")
            if option in wrapper.unknowable:
                return i, None, f"{option} makes the command unknowable"
            if option in wrapper.shell_string:
                return i, _literal_word(argument) if equals else _at(words, i + 1), None
            if option in wrapper.with_argument and not equals:
                i += 1
        elif options and value.startswith("-") and len(value) > 1:
            for j in range(1, len(value)):
                option = "-" + value[j]
                if option in wrapper.unknowable:
                    return i, None, f"{option} makes the command unknowable"
                if option in wrapper.shell_string:
                    attached = value[j + 1 :]
                    return i, _literal_word(attached) if attached else _at(words, i + 1), None
                if option in wrapper.with_argument:
                    if j + 1 == len(value):
                        i += 1
                    break
        elif wrapper.assignments and (value == "-" or re.match(r"[A-Za-z_][A-Za-z0-9_]*=", value)):
            pass
        elif operands:
            operands -= 1
        else:
            return i, None, None
        i += 1
    return i, None, None


def _at(words: list[_Word], index: int) -> _Word | None:
    return words[index] if index < len(words) else None


def _literal_word(text: str) -> _Word:
    return _Word([("c", c, True) for c in text], quoted=1, raw=text)


def _shell_forms(args: list[_Word], depth: int, forms: list[str], dash: bool) -> str | None:
    """A shell's arguments: ``-c STRING`` is a command line; no operand or
    ``-s`` reads commands from its input; else it runs a script file."""
    command = stdin = False
    i = 0
    while i < len(args):
        value = args[i].value
        if value is None:
            return "a shell given an expansion"
        if value in ("-", "--"):
            i += 1
            break
        if value in ("--rcfile", "--init-file"):
            i += 2
            continue
        if value.startswith("--"):
            i += 1
            continue
        if value[:1] in ("-", "+") and len(value) > 1:
            command = command or "c" in value[1:]
            stdin = stdin or "s" in value[1:]
            if value[-1] in "oO":
                i += 1
            i += 1
            continue
        break
    if command:
        return _string_forms(_at(args, i), depth, forms, dash)
    if stdin or i >= len(args):
        return "a shell reading commands from its input"
    return None


def _runs_a_string(args: list[_Word]) -> bool:
    """Whether a shell's arguments give it a command line (``-c``)."""
    for word in args:
        value = word.value or ""
        if not value.startswith(("-", "+")) or value in ("-", "--"):
            return False
        if "c" in value[1:] and not value.startswith("--"):
            return True
    return False


def _string_forms(
    word: _Word | None, depth: int, forms: list[str], dash: bool = False
) -> str | None:
    if word is None:
        return None
    if word.value is None:
        return "a command line made of an expansion"
    return _line_forms(word.value, depth, forms, dash)


def _line_forms(line: str, depth: int, forms: list[str], dash: bool = False) -> str | None:
    """The forms of every command of a command line run by a command (by
    dash itself when ``dash``, else maybe by another shell)."""
    if depth >= _MAX_DEPTH:
        return "commands nested too deeply to follow"
    split = _split(line, depth + 1) if "\0" not in line else None
    if split is None:
        return "a command line holding a NUL character"
    unknown = None
    for command in split.commands:
        forms.append(command.text)
        forms.extend(command.forms)
        unknown = unknown or command.unknown
    doubts = _READING_DOUBTS if dash else _OTHER_SHELL_DOUBTS
    if unknown is None and doubts.intersection(split.doubts):
        unknown = "a command line its shell may read otherwise"
    return unknown
