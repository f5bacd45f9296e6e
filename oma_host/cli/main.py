"""The ``oma-host`` command: argparse reads every command's options, the
words after ``acp`` excepted (:mod:`.acp_args`), and is imported only for
them, since ``oma-host acp`` answers ``initialize`` first and editors wait."""

from __future__ import annotations

import os
import sys

from oma_host.core.cli_options import (
    BROKEN_PIPE,
    INTERRUPTED,
    LOG_LEVELS,
    positive_int,
    positive_seconds,
)
from oma_host.core.provider_table import provider_table
from oma_host.core.version import __version__
from oma_host.wire.limits import (
    DEFAULT_DRAIN_TIMEOUT_S,
    DEFAULT_HANDSHAKE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_MESSAGE_BYTES,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from oma_host.cli.acp_args import AcpCommand

_VERSION = f"oma-host {__version__}"


def _parse_tcp(value: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[IPV6]:PORT`` (brackets as in a URL)."""
    import argparse

    host, sep, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:  # an unbracketed IPv6 address cannot be told from its port
        raise argparse.ArgumentTypeError(
            f"--tcp wants [HOST:]PORT with an IPv6 host in brackets ([::1]:PORT), got {value!r}"
        )
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tcp wants [HOST:]PORT, got {value!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"--tcp: port {number} is not between 0 and 65535")
    return (host if sep and host else "127.0.0.1", number)


def _checked(check: Callable[[str], Any]) -> Callable[[str], Any]:
    """``check`` (from :mod:`.options`) as an argparse type: its ValueError
    becomes the usage error, with its message."""

    def checked(value: str) -> Any:
        import argparse

        try:
            return check(value)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return checked


_positive_seconds = _checked(positive_seconds)
_positive_int = _checked(positive_int)


def build_parser() -> argparse.ArgumentParser:
    """Every command's options but ``acp``'s, whose words after ``acp`` are
    read by :func:`.acp_args.parse_acp` (the options given before ``acp``
    stand unless given again after it)."""
    import argparse

    from oma_host.cli.acp_args import DESCRIPTION
    from oma_host.cli.runs_args import add_runs_parser

    parser = argparse.ArgumentParser(
        prog="oma-host",
        description="A JSON-RPC agent host for editors and tools (LSP framing on stdio).",
    )
    parser.add_argument("--version", action="version", version=_VERSION)
    parser.add_argument(
        "--tcp",
        metavar="[HOST:]PORT",
        type=_parse_tcp,
        help="serve over TCP instead of stdio (binds 127.0.0.1 unless HOST is given)",
    )
    parser.add_argument(
        "--max-message-bytes",
        type=int,
        default=DEFAULT_MAX_MESSAGE_BYTES,
        help="frames larger than this are discarded and answered with -32600 (default 64 MiB)",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="append every frame in and out, timestamped and with keys redacted, to FILE",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where sessions, run traces and evaluation records are kept "
        "(default $XDG_STATE_HOME/oma-host; ':memory:' keeps nothing)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=LOG_LEVELS,
        help="stderr log level (default WARNING)",
    )
    parser.add_argument(
        "--framing",
        default="auto",
        choices=["auto", "lsp", "ndjson"],
        help="message framing: LSP Content-Length headers, or newline-delimited JSON; "
        "auto (the default) picks one from the first bytes the client sends",
    )
    parser.add_argument(
        "--drain-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=DEFAULT_DRAIN_TIMEOUT_S,
        help="on ndjson, end of input lets the requests in flight finish and be answered "
        f"for up to this long (default {DEFAULT_DRAIN_TIMEOUT_S:g})",
    )
    tcp = parser.add_argument_group("TCP (with --tcp)")
    tcp.add_argument(
        "--token-file",
        metavar="FILE",
        help="the token clients must send (at least 32 characters, in a file only you can "
        "read); default: a random one",
    )
    tcp.add_argument(
        "--max-connections",
        metavar="N",
        type=_positive_int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="connections served at once once they show the token; more are closed "
        f"(default {DEFAULT_MAX_CONNECTIONS})",
    )
    tcp.add_argument(
        "--handshake-timeout",
        metavar="SECONDS",
        type=_positive_seconds,
        default=DEFAULT_HANDSHAKE_TIMEOUT_S,
        help="a connection must send its authenticated initialize within this "
        f"(default {DEFAULT_HANDSHAKE_TIMEOUT_S:g})",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="spawn a host as an editor would and show a readable transcript"
    )
    demo.add_argument("--host-command", nargs="+", help="argv of the host to spawn")
    table = provider_table()
    live = table["defaultCandidates"]
    demo.add_argument(
        "--live",
        action="store_true",
        help="use the real provider instead of the simulator (needs "
        + " or ".join(name for p in live for name in table["providers"][p]["keyVariables"])
        + ")",
    )
    demo.add_argument("--provider", choices=live, help="with --live")
    demo.add_argument("--model", help="with --live: the model to ask")
    console = commands.add_parser(
        "console", help="an interactive console: start a host and talk to it by short commands"
    )
    console.add_argument("--host-command", nargs="+", help="argv of the host to spawn")
    call = commands.add_parser(
        "call",
        help="send one request to a host and print the result as JSON (progress on stderr)",
    )
    call.add_argument("method", help="the method, e.g. oma/runAgent")
    call.add_argument("params", nargs="?", help="params as JSON, or - to read them from stdin")
    call.add_argument(
        "--agent",
        metavar="CONFIG",
        help="create this agent first; its agentId is added to the params (JSON, or - for stdin)",
    )
    call.add_argument("--init", metavar="JSON", help="initializationOptions")
    call.add_argument("--connect", metavar="HOST:PORT", help="use a host serving --tcp")
    call.add_argument(
        "--token-file",
        dest="call_token_file",
        metavar="FILE",
        help="with --connect: the host's token file (default: the one it keeps for its port)",
    )
    call.add_argument("--host-command", nargs="+", help="argv of the host to spawn")
    call.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    # prefix_chars: nothing after ``acp`` is an option here; parse_acp reads it all.
    acp = commands.add_parser("acp", help=DESCRIPTION, add_help=False, prefix_chars="\0")
    acp.add_argument("words", nargs=argparse.REMAINDER)
    for name, what in (("login", "keep a provider's key"), ("logout", "remove kept keys")):
        account = commands.add_parser(
            name, help=f"{what} for both doors (read when its variable is not set)"
        )
        account.add_argument("--provider", help="the provider (default: ask; logout: all)")
    add_runs_parser(commands)
    schema = commands.add_parser(
        "schema", help="print the JSON Schema of every method's params and result"
    )
    schema.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    return parser


def _forwarded_options(args: argparse.Namespace) -> list[str]:
    """The host options given before ``call``, for the host it spawns:
    ``oma-host --trace t.jsonl call ...`` traces that host."""
    forwarded = ["--log-level", args.log_level]
    if args.trace:
        forwarded += ["--trace", args.trace]
    if args.state_dir:
        forwarded += ["--state-dir", args.state_dir]
    if args.max_message_bytes != DEFAULT_MAX_MESSAGE_BYTES:
        forwarded += ["--max-message-bytes", str(args.max_message_bytes)]
    return forwarded


def main(argv: list[str] | None = None) -> int:
    """Run the command line; Ctrl-C ends any command quietly with status 130,
    and so does a reader of stdout that goes away (``oma-host runs list |
    head``), with 141 as for a program SIGPIPE ended. ``oma-host acp ...``
    is read by :func:`.acp_args.parse_acp` alone, argparse not imported."""
    words = sys.argv[1:] if argv is None else argv
    try:
        if words[:1] == ["acp"]:
            from oma_host.cli.acp_args import parse_acp

            status = _acp(parse_acp(words[1:]))
        else:
            status = _run(build_parser().parse_args(words))
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return status
    except KeyboardInterrupt:
        return INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return BROKEN_PIPE


def _discard_stdout() -> None:
    """Point stdout at /dev/null, so that what is still buffered for the
    reader that went away is dropped at exit instead of raising again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _run(args: argparse.Namespace) -> int:
    if args.command == "acp":
        from oma_host.cli.acp_args import parse_acp

        given = {"state_dir": args.state_dir, "max_message_bytes": args.max_message_bytes}
        return _acp(parse_acp(args.words, log_level=args.log_level, **given))
    from oma_host.cli.stderr_log import configure_logging

    configure_logging(args.log_level)
    if args.command == "demo":
        from oma_host.cli.demo import run_demo

        demo_exit: int = run_demo(
            args.host_command, live=args.live, provider=args.provider, model=args.model
        )
        return demo_exit
    if args.command == "console":
        from oma_host.cli.console import run_console

        console_exit: int = run_console(args.host_command)
        return console_exit
    if args.command == "call":
        from oma_host.cli.call import run_call
        from oma_host.cli.client import host_argv

        call_exit: int = run_call(
            args.method,
            args.params,
            agent_text=args.agent,
            init_text=args.init,
            connect=args.connect,
            token_file=args.call_token_file,
            host_command=args.host_command or host_argv(*_forwarded_options(args)),
            timeout=args.timeout,
        )
        return call_exit
    if args.command == "login":
        from oma_host.cli.login import run_login

        return run_login(args.provider)
    if args.command == "logout":
        from oma_host.cli.login import run_logout

        return run_logout(args.provider)
    if args.command == "runs":
        from oma_host.cli.runs import run_runs

        return run_runs(args)
    if args.command == "schema":
        from oma_host.cli.schema import write_schema

        write_schema(args.out)
        return 0
    return _serve(args)


def _acp(command: AcpCommand) -> int:
    """Log in or out for the ACP door, or serve ACP on stdio; logging, the
    subreaper and the collector are set up once ``initialize`` is answered,
    which the editor waits for."""
    from oma_host.acp_server.serve import serve_acp

    if command.action is not None:
        from oma_host.cli.login import run_login, run_logout
        from oma_host.cli.stderr_log import configure_logging

        configure_logging(command.log_level)
        return (run_login if command.action == "login" else run_logout)(None)

    def ready() -> None:
        from oma_host.cli.stderr_log import configure_logging
        from oma_host.process.collector import tune_for_serving
        from oma_host.process.subreaper import enable_subreaper

        configure_logging(command.log_level)
        enable_subreaper()  # a host: what its runs leave behind comes back to it
        tune_for_serving()

    return serve_acp(command.options, ready)


def _serve(args: argparse.Namespace) -> int:
    """Serve on stdio or TCP; a --trace or --token-file that cannot be used,
    or a port that cannot be bound, ends with status 2 and the reason."""
    from oma_host.process.collector import tune_for_serving
    from oma_host.process.subreaper import enable_subreaper
    from oma_host.server import serve_stdio
    from oma_host.server.app import SessionOptions
    from oma_host.server.tcp import TcpOptions, serve_tcp
    from oma_host.server.tcp_token import TokenFileError

    enable_subreaper()  # a host: what its runs leave behind comes back to it
    tune_for_serving()
    if args.token_file and args.tcp is None:
        print("oma-host: --token-file is for --tcp", file=sys.stderr)
        return 2
    try:
        tracer = None
        if args.trace:
            from oma_host.server.frame_trace import FrameTracer

            tracer = FrameTracer(args.trace)
        options = SessionOptions(
            max_message_bytes=args.max_message_bytes,
            framing=args.framing,
            state_dir=args.state_dir,
            tracer=tracer,
            drain_timeout_s=args.drain_timeout,
        )
        if args.tcp is not None:
            host, port = args.tcp
            tcp = TcpOptions(
                host,
                port,
                token_file=args.token_file,
                max_connections=args.max_connections,
                handshake_timeout_s=args.handshake_timeout,
            )
            return serve_tcp(tcp, options)
    except (TokenFileError, OSError) as error:
        print(f"oma-host: {error}", file=sys.stderr)
        return 2
    if sys.stdin.isatty():  # a person, not an editor: say what the silence means
        print(
            "oma-host: waiting for JSON-RPC on stdin (one JSON message per line, or LSP "
            "Content-Length frames); Ctrl-D ends; oma-host --help for more",
            file=sys.stderr,
            flush=True,
        )
    return serve_stdio(options)


if __name__ == "__main__":
    sys.exit(main())
