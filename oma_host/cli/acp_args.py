"""``oma-host acp``'s command line: each option declared once, in
:data:`ACP_OPTIONS`, and read by a parser that imports neither argparse nor
``re``, since the door answers ``initialize`` right after it and editors wait."""

from __future__ import annotations

import sys

from oma_host.acp_server.serve import AcpOptions
from oma_host.core.cli_options import (
    DEFAULT_SESSION_IDLE_TIMEOUT_S,
    LOG_LEVELS,
    collector_url,
    positive_int,
    positive_seconds,
    true_or_false,
)
from oma_host.core.version import __version__
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

PROG = "oma-host acp"
DESCRIPTION = "serve the agents as an ACP agent on stdio, for ACP editors (Zed, JetBrains)"
# Instead of serving: the ACP terminal auth method's login, or a logout.
ACTIONS = ("login", "logout")


def _log_level(value: str) -> str:
    if value not in LOG_LEVELS:
        choices = ", ".join(repr(level) for level in LOG_LEVELS)
        raise ValueError(f"invalid choice: {value!r} (choose from {choices})")
    return value


class AcpOption:
    """One option of ``oma-host acp``: its name, the :class:`AcpOptions`
    attribute it sets, how its value is shown and checked (None: a flag,
    which sets True), and its help."""

    __slots__ = ("check", "dest", "help", "metavar", "name")

    def __init__(
        self,
        name: str,
        dest: str,
        metavar: str,
        check: Callable[[str], object] | None,
        help: str,
    ) -> None:
        self.name = name
        self.dest = dest
        self.metavar = metavar
        self.check = check
        self.help = help


ACP_OPTIONS = (
    AcpOption(
        "--agents",
        "agents_file",
        "FILE",
        str,
        "a JSON array of agent configs, the first the default (default "
        "$XDG_CONFIG_HOME/oma-host/agents.json, else one agent for the provider key set)",
    ),
    AcpOption(
        "--state-dir",
        "state_dir",
        "DIR",
        str,
        "where sessions and run traces are kept (default $XDG_STATE_HOME/oma-host; "
        "':memory:' keeps nothing)",
    ),
    AcpOption(
        "--log-level",
        "log_level",
        "{" + ",".join(LOG_LEVELS) + "}",
        _log_level,
        "stderr log level (default WARNING)",
    ),
    AcpOption(
        "--max-message-bytes",
        "max_message_bytes",
        "N",
        positive_int,
        "a line larger than this is dropped, a request answered with -32600 (default 64 MiB)",
    ),
    AcpOption(
        "--session-idle-timeout",
        "session_idle_timeout_s",
        "SECONDS",
        positive_seconds,
        "a session that runs nothing this long has its agent's processes (MCP servers, "
        "an ACP agent) ended; its next prompt starts them again "
        f"(default {DEFAULT_SESSION_IDLE_TIMEOUT_S:g})",
    ),
    AcpOption(
        "--telemetry-endpoint",
        "telemetry_endpoint",
        "URL",
        collector_url,
        "export the turns' spans to this OpenTelemetry collector (OTLP/HTTP base URL; "
        "default: the OTEL_* variables say whether and where, docs/telemetry.md)",
    ),
    AcpOption(
        "--telemetry-capture-content",
        "telemetry_capture_content",
        "true|false",
        true_or_false,
        "record message text in the turns' spans, redacted and bounded: in the state "
        "directory (the run viewer shows it) and in the export when there is one "
        "(default: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)",
    ),
    AcpOption(
        "--no-telemetry",
        "no_telemetry",
        "",
        None,
        "export no spans, whatever the OTEL_* variables and the two options above say "
        "(the turns are still recorded in the state directory)",
    ),
)


class AcpCommand:
    """``oma-host acp`` as given: the door's options, the log level and the
    action (None: serve)."""

    __slots__ = ("action", "log_level", "options")

    def __init__(self, options: AcpOptions, log_level: str, action: str | None) -> None:
        self.options = options
        self.log_level = log_level
        self.action = action


class _UsageError(Exception):
    pass


def parse_acp(
    words: list[str],
    *,
    state_dir: str | None = None,
    log_level: str = "WARNING",
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AcpCommand:
    """The command ``words`` (what follows ``acp``) give, over the options
    given before ``acp`` (``state_dir``, ``log_level``, ``max_message_bytes``).
    ``--help`` and ``--version`` print and exit 0; a usage error prints the
    usage and the error, and exits 2, as argparse does."""
    values: dict[str, object] = {
        "state_dir": state_dir,
        "log_level": log_level,
        "max_message_bytes": max_message_bytes,
    }
    try:
        action = _read(words, values)
    except _UsageError as error:
        print(_usage(), file=sys.stderr)
        print(f"{PROG}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    log = str(values.pop("log_level"))
    options = AcpOptions(None, None, DEFAULT_SESSION_IDLE_TIMEOUT_S)
    for dest, value in values.items():
        setattr(options, dest, value)
    return AcpCommand(options, log, action)


def _read(words: list[str], values: dict[str, object]) -> str | None:
    """Fill ``values`` (by :attr:`AcpOption.dest`) from ``words``; the action."""
    action: str | None = None
    rest = iter(words)
    for word in rest:
        if word in ("-h", "--help"):
            print(help_text())
            raise SystemExit(0)
        if word == "--version":
            print(f"oma-host {__version__}")
            raise SystemExit(0)
        if not word.startswith("-") or _negative_number(word):
            if action is not None:
                raise _UsageError(f"unrecognized arguments: {word}")
            if word not in ACTIONS:
                choices = ", ".join(repr(name) for name in ACTIONS)
                raise _UsageError(
                    f"argument action: invalid choice: {word!r} (choose from {choices})"
                )
            action = word
            continue
        name, equals, value = word.partition("=")
        option = _option(name)
        if option.check is None:
            if equals:
                raise _UsageError(f"argument {option.name}: ignored explicit argument {value!r}")
            values[option.dest] = True
            continue
        if not equals:
            value = next(rest, "-")
            if value.startswith("-") and not _negative_number(value):
                raise _UsageError(f"argument {option.name}: expected one argument")
        try:
            values[option.dest] = option.check(value)
        except ValueError as error:
            raise _UsageError(f"argument {option.name}: {error}") from None
    return action


def _option(name: str) -> AcpOption:
    """The option ``name`` names, in full or by a prefix of one option alone."""
    exact = [option for option in ACP_OPTIONS if option.name == name]
    if exact:
        return exact[0]
    prefixed = [
        option for option in ACP_OPTIONS if name.startswith("--") and option.name.startswith(name)
    ]
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        names = ", ".join(option.name for option in prefixed)
        raise _UsageError(f"ambiguous option: {name} could match {names}")
    raise _UsageError(f"unrecognized arguments: {name}")


def _negative_number(word: str) -> bool:
    """A word argparse would take as a value, not an option: ``-5``, ``-0.5``."""
    try:
        float(word)
    except ValueError:
        return False
    return True


def _usage() -> str:
    import textwrap  # a usage error's or the help's alone

    shown = [
        f"[{option.name}]" if option.check is None else f"[{option.name} {option.metavar}]"
        for option in ACP_OPTIONS
    ]
    actions = "{" + ",".join(ACTIONS) + "}"
    words = f"usage: {PROG} [-h] [--version] {' '.join(shown)} [{actions}]"
    indent = " " * len(f"usage: {PROG} ")
    return textwrap.fill(
        words, 80, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )


def help_text() -> str:
    """What ``oma-host acp --help`` prints, laid out as argparse lays out help."""
    import textwrap

    entries: list[tuple[str, list[tuple[str, str]]]] = [
        (
            "positional arguments",
            [
                (
                    "{" + ",".join(ACTIONS) + "}",
                    "instead of serving: log in (the ACP terminal auth method) or out",
                )
            ],
        ),
        (
            "options",
            [
                ("-h, --help", "show this help message and exit"),
                ("--version", "show program's version number and exit"),
            ]
            + [
                (
                    option.name if option.check is None else f"{option.name} {option.metavar}",
                    option.help,
                )
                for option in ACP_OPTIONS
            ],
        ),
    ]
    lines = [_usage(), "", DESCRIPTION[0].upper() + DESCRIPTION[1:] + ".", ""]
    for title, rows in entries:
        lines.append(f"{title}:")
        for shown, text in rows:
            wrapped = textwrap.wrap(text, 80 - 24, break_on_hyphens=False)
            if len(shown) <= 20:
                lines.append(f"  {shown:<20}  {wrapped[0]}")
                wrapped = wrapped[1:]
            else:
                lines.append(f"  {shown}")
            lines += [" " * 24 + line for line in wrapped]
        lines.append("")
    return "\n".join(lines).rstrip("\n")
