"""``oma-host acp``: check the agents, then serve ACP on stdio until the
editor closes it. A bad agents file is one line on stderr and exit status 2,
before any ACP traffic."""

from __future__ import annotations

import asyncio
import sys

from oma_host.acp_server.agents import AgentsFileError, load_agents
from oma_host.core.config import AgentConfig

# The exit status of a usage error, as argparse gives it.
USAGE_ERROR = 2


def serve_acp(agents_file: str | None, state_dir: str | None) -> int:
    """Serve the agents of ``agents_file`` (see :mod:`.agents`) on stdio."""
    try:
        configs = load_agents(agents_file)
    except AgentsFileError as error:
        print(f"oma-host acp: {error}", file=sys.stderr, flush=True)
        return USAGE_ERROR
    asyncio.run(_serve(configs, state_dir))
    return 0


async def _serve(configs: list[AgentConfig], state_dir: str | None) -> None:
    from acp.stdio import stdio_streams

    from oma_host.acp_server.door import OmaAcpAgent
    from oma_host.acp_server.editor import EditorClient
    from oma_host.acp_server.routes import door_routes
    from oma_host.acp_server.wire import LINE_LIMIT, AcpWire

    agent = OmaAcpAgent(configs, state_dir)
    try:
        # The library's stdio streams (the platform's pipes); the JSON-RPC on
        # them is ours (:mod:`.wire`).
        reader, writer = await stdio_streams(limit=LINE_LIMIT)
        wire = AcpWire(reader, writer)
        agent.on_connect(EditorClient(wire))
        await wire.serve(*door_routes(agent))
    finally:
        await agent.close()
