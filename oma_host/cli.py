"""The ``oma-host`` command: serve over stdio (default) or TCP, or run the demo."""

from __future__ import annotations

import argparse
import logging
import sys

from oma_host.server.framing import DEFAULT_MAX_MESSAGE_BYTES


def _parse_tcp(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--tcp wants [HOST:]PORT, got {value!r}") from None
    return (host if sep and host else "127.0.0.1", number)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oma-host",
        description="A JSON-RPC agent host for editors and tools (LSP framing on stdio).",
    )
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
        "--state-dir",
        metavar="DIR",
        help="where sessions, run traces and evaluation records are kept "
        "(default $XDG_STATE_HOME/oma-host; ':memory:' keeps nothing)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="stderr log level (default WARNING)",
    )
    parser.add_argument(
        "--framing",
        default="auto",
        choices=["auto", "lsp", "ndjson"],
        help="message framing: LSP Content-Length headers, or newline-delimited JSON; "
        "auto (the default) picks one from the first bytes the client sends",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="spawn a host as an editor would and show a readable transcript"
    )
    demo.add_argument("--host-command", nargs="+", help="argv of the host to spawn")
    demo.add_argument(
        "--live",
        action="store_true",
        help="use the real provider instead of the simulator "
        "(needs ANTHROPIC_API_KEY or OPENAI_API_KEY)",
    )
    demo.add_argument("--provider", choices=["anthropic", "openai"], help="with --live")
    demo.add_argument("--model", help="with --live: the model to ask")
    console = commands.add_parser(
        "console", help="an interactive console: start a host and talk to it by short commands"
    )
    console.add_argument("--host-command", nargs="+", help="argv of the host to spawn")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        stream=sys.stderr,
        format="oma-host %(levelname)s %(name)s: %(message)s",
    )
    # pygls logs whole message bodies at INFO; keep them out of stderr unless debugging.
    logging.getLogger("pygls").setLevel(
        logging.DEBUG if args.log_level == "DEBUG" else logging.CRITICAL
    )
    if args.command == "demo":
        from oma_host.demo import run_demo

        demo_exit: int = run_demo(
            args.host_command, live=args.live, provider=args.provider, model=args.model
        )
        return demo_exit
    if args.command == "console":
        from oma_host.console import run_console

        console_exit: int = run_console(args.host_command)
        return console_exit
    if args.tcp is not None:
        from oma_host.server import serve_tcp

        host, port = args.tcp
        return serve_tcp(host, port, args.max_message_bytes, args.framing, args.state_dir)
    from oma_host.server import serve_stdio

    return serve_stdio(args.max_message_bytes, args.framing, args.state_dir)


if __name__ == "__main__":
    sys.exit(main())
