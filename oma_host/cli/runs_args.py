"""The command line of ``oma-host runs``, argparse only.

The parser is built on every start of ``oma-host``; :mod:`.runs` is imported
only when it is the command.
"""

from __future__ import annotations

import argparse

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--port wants a number, got {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"--port: {port} is not between 0 and 65535")
    return port


def _state_dir_option(parser: argparse.ArgumentParser) -> None:
    """``--state-dir`` where a user may type it: before ``runs``, after it,
    or after the action (``runs list --state-dir DIR``); the last one given
    stands (SUPPRESS: a level that is not given leaves the earlier one)."""
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the host's state directory (default $XDG_STATE_HOME/oma-host)",
    )


def add_runs_parser(commands: Any) -> None:
    """The ``runs`` command and its actions, on ``oma-host``'s subparsers."""
    runs = commands.add_parser(
        "runs", help="list, show, export and serve the runs recorded in a state directory"
    )
    _state_dir_option(runs)
    actions = runs.add_subparsers(dest="runs_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="one line per run, newest first")
    listing.add_argument("--agent", metavar="NAME", help="only the runs of this agent")
    listing.add_argument(
        "--since",
        metavar="T",
        help="only runs started since T: 2025-06-01, 2025-06-01T14:30, 2h, 3d",
    )
    listing.add_argument("--status", help="only runs that ended so (ok, error, cancelled...)")
    listing.add_argument(
        "--text", help="only runs with this text in their id, agent, model, session or error"
    )
    listing.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    listing.add_argument("--json", action="store_true", help="as a JSON array")
    _state_dir_option(listing)
    show = actions.add_parser("show", help="one run's steps as a tree, and its evaluations")
    show.add_argument("run", metavar="RUN", help="the run id (runs list shows them)")
    show.add_argument("--json", action="store_true", help="as JSON, the spans as a tree")
    _state_dir_option(show)
    export = actions.add_parser("export", help="one run's spans as OTLP JSON, for trace viewers")
    export.add_argument("run", metavar="RUN", help="the run id (runs list shows them)")
    _state_dir_option(export)
    serve = actions.add_parser(
        "serve",
        help="the run viewer: a page on 127.0.0.1 listing the runs and showing each as a timeline",
    )
    _state_dir_option(serve)
    serve.add_argument(
        "--port",
        type=_port,
        default=0,
        help="the port on 127.0.0.1 (default 0: any free port; the URL is printed)",
    )
    serve.add_argument(
        "--token-file",
        metavar="FILE",
        default=argparse.SUPPRESS,  # given before ``runs``, that one stands
        help="the token the page and the API want (at least 32 characters, in a file only "
        "you can read); default: a random one",
    )
