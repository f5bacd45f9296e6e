"""The JSON-RPC door: the host served over stdio, or over TCP (docs/protocol.md).

One :class:`~oma_host.server.app.HostSession` per connection; every method is
declared in :mod:`.registry` and implemented in a handler module loaded on
first use, so answering ``initialize`` stays light.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING

from oma_host.process.termination import Termination
from oma_host.wire.stdio import protect_stdout, stdin_reader

if TYPE_CHECKING:
    from oma_host.server.app import SessionOptions

log = logging.getLogger("oma_host.server")


async def _serve_stdio(options: SessionOptions) -> int:
    from oma_host.server.app import HostSession, stdout_writer

    frames_out = protect_stdout()
    session = HostSession(stdout_writer(frames_out), options)
    termination = Termination(_current_task())
    try:
        return await session.serve(await stdin_reader())
    except asyncio.CancelledError:
        if termination.signum is None:
            raise  # Ctrl-C: asyncio.run makes it a KeyboardInterrupt (exit 130)
        return termination.exit_code  # the session ended its runs on the way out
    finally:
        termination.remove()
        await close_telemetry()
        await close_http_client()


def _current_task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None, "called from a coroutine"
    return task


async def close_telemetry() -> None:
    """Send the spans still queued and stop the exporters, if a run ever built one."""
    from oma_host.telemetry import close_if_used

    await close_if_used()


async def close_http_client() -> None:
    """Close the providers' shared HTTP client, if a provider ever loaded it,
    and free its settings."""
    http = sys.modules.get("oma_host.providers.http")
    # A module still being imported (the warm-up thread, when Ctrl-C comes)
    # has no client yet, and may not have the function either.
    close = getattr(http, "close_shared_client", None)
    if close is not None:
        await close()
        return
    # No client was built, but an ``initialize`` may have settled its settings.
    settings = sys.modules.get("oma_host.providers.http_settings")
    release = getattr(settings, "release_http_settings", None)
    if release is not None:
        release()


def _default_options() -> SessionOptions:
    from oma_host.server.app import SessionOptions

    return SessionOptions(framing="auto")


def serve_stdio(options: SessionOptions | None = None) -> int:
    """Serve one client on stdin/stdout; returns the process exit code."""
    return asyncio.run(_serve_stdio(options or _default_options()))
