"""``oma-host acp``: check the agents, then serve ACP on stdio until the
editor closes it (or SIGTERM or SIGHUP ends it, as Ctrl-C does). A bad
agents file is one line on stderr and exit status 2, before any ACP traffic."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass

from oma_host.acp_server.agents import AgentsFileError, load_agents
from oma_host.core.config import AgentConfig
from oma_host.core.framing import DEFAULT_MAX_MESSAGE_BYTES
from oma_host.core.stdio import protect_stdout, stdin_reader, stream_writer
from oma_host.core.termination import Termination

# The exit status of a usage error, as argparse gives it.
USAGE_ERROR = 2


@dataclass(frozen=True)
class AcpOptions:
    """The command line's choices for ``oma-host acp``."""

    agents_file: str | None
    state_dir: str | None
    # How long a session's agent keeps its processes while it runs nothing.
    session_idle_timeout_s: float
    # A line longer than this is dropped (a request answered -32600).
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


def serve_acp(options: AcpOptions) -> int:
    """Serve the agents of ``options.agents_file`` (see :mod:`.agents`) on stdio."""
    try:
        configs = load_agents(options.agents_file)
    except AgentsFileError as error:
        print(f"oma-host acp: {error}", file=sys.stderr, flush=True)
        return USAGE_ERROR
    return asyncio.run(_serve(configs, options))


async def _serve(configs: list[AgentConfig], options: AcpOptions) -> int:
    """Serve until the editor closes stdin (0), or until SIGTERM or SIGHUP
    (128 plus its number), the sessions' agents and servers ended either way."""
    task = asyncio.current_task()
    assert task is not None
    termination = Termination(task)
    try:
        await _serve_editor(configs, options)
    except asyncio.CancelledError:
        if termination.signum is None:
            raise  # Ctrl-C: asyncio.run makes it a KeyboardInterrupt (exit 130)
    finally:
        termination.remove()
    return 0 if termination.signum is None else termination.exit_code


async def _serve_editor(configs: list[AgentConfig], options: AcpOptions) -> None:
    from oma_host.acp_server.door import OmaAcpAgent
    from oma_host.acp_server.editor import EditorClient
    from oma_host.acp_server.routes import door_routes
    from oma_host.acp_server.wire import READ_CHUNK, AcpWire

    agent = OmaAcpAgent(configs, options.state_dir, options.session_idle_timeout_s)
    try:
        # Pipes from an editor, or files and /dev/null from a script.
        writer = await stream_writer(protect_stdout())
        reader = await stdin_reader(READ_CHUNK)
        wire = AcpWire(reader, writer, options.max_message_bytes)
        agent.on_connect(EditorClient(wire))
        await wire.serve(*door_routes(agent))
    finally:
        await agent.close()
