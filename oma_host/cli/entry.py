"""The ``oma-host`` command's entry point (``python -m oma_host`` too): for
``oma-host acp``, the door's early answer to ``initialize``
(:mod:`oma_host.acp_server.early`) before anything else is imported; then
the command line (:mod:`.main`), which goes on from what that answer read."""

from __future__ import annotations

import sys

from oma_host.core.cli_options import INTERRUPTED


def main() -> int:
    argv = sys.argv[1:]
    try:
        from oma_host.acp_server.early import answer_early

        early = answer_early(argv)
    except KeyboardInterrupt:  # Ctrl-C while the door waits for its first request
        return INTERRUPTED
    from oma_host.cli.main import main as run_command_line

    return run_command_line(argv, early)
