"""The command line of ``oma-host runs`` (argparse only: the parser is
built on every start of ``oma-host``, and what carries the command out,
:mod:`.runs`, is imported only when it is the command)."""

from __future__ import annotations

import argparse
from typing import Any


def add_runs_parser(commands: Any) -> None:
    """The ``runs`` command and its actions, on ``oma-host``'s subparsers."""
    runs = commands.add_parser(
        "runs", help="list, show and export the runs recorded in a state directory"
    )
    runs.add_argument(
        "--state-dir",
        metavar="DIR",
        default=argparse.SUPPRESS,  # given before ``runs``, that one stands
        help="the host's state directory (default $XDG_STATE_HOME/oma-host)",
    )
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
    show = actions.add_parser("show", help="one run's steps as a tree, and its evaluations")
    show.add_argument("run", metavar="RUN", help="the run id (runs list shows them)")
    show.add_argument("--json", action="store_true", help="as JSON, the spans as a tree")
    export = actions.add_parser("export", help="one run's spans as OTLP JSON, for trace viewers")
    export.add_argument("run", metavar="RUN", help="the run id (runs list shows them)")
