"""``oma-host acp``: read the agents once, answer ``initialize`` from that
reading, then check the configs and serve ACP on stdio.

Editors wait for the first answer, so nothing heavy (asyncio, pydantic, the
ACP library) is imported before it is written.
"""

from __future__ import annotations

from oma_host.acp_server.agents import read_agents, serve_reading
from oma_host.acp_server.handshake import answer_first_request
from oma_host.core.places import serve_agents_file
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from oma_host.acp_server.door import OmaAcpAgent
    from oma_host.acp_server.editor import EditorClient
    from oma_host.telemetry.settings import Telemetry


class AcpOptions:
    """The command line's choices for ``oma-host acp`` (:mod:`oma_host.cli.main`
    declares each option once)."""

    __slots__ = (
        "agents_file",
        "max_message_bytes",
        "no_telemetry",
        "session_idle_timeout_s",
        "state_dir",
        "telemetry_capture_content",
        "telemetry_endpoint",
    )

    def __init__(
        self,
        agents_file: str | None,
        state_dir: str | None,
        session_idle_timeout_s: float,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        *,
        telemetry_endpoint: str | None = None,
        telemetry_capture_content: bool | None = None,
        no_telemetry: bool = False,
    ) -> None:
        self.agents_file = agents_file
        self.state_dir = state_dir
        # How long a session's agent keeps its processes while it runs nothing.
        self.session_idle_timeout_s = session_idle_timeout_s
        # A line longer than this is dropped (a request answered -32600).
        self.max_message_bytes = max_message_bytes
        # --telemetry-endpoint, --telemetry-capture-content: export asked for on the
        # command line (else the OTEL_* variables say; oma_host.telemetry.settings);
        # --no-telemetry: no export, over the variables and those two.
        self.telemetry_endpoint = telemetry_endpoint
        self.telemetry_capture_content = telemetry_capture_content
        self.no_telemetry = no_telemetry


def serve_acp(options: AcpOptions, ready: Callable[[], None] = lambda: None) -> int:
    """Serve the agents of ``options.agents_file`` (see :mod:`.agents`) on
    stdio until the editor closes it (0), or SIGTERM or SIGHUP ends it (128
    plus its number). A bad agents file does not end the door: it is one
    warning on stderr, and every session request is refused with -32602
    naming the file, the JSON path and the problem. ``ready``: what the
    command line sets up once ``initialize`` is answered (logging)."""
    serve_agents_file(options.agents_file)  # which no agent may change unasked
    reading = read_agents(options.agents_file)
    first = answer_first_request(list(reading.auth_methods.values()), options.max_message_bytes)
    ready()
    agents = serve_reading(reading)  # the configs checked, after the answer
    import logging

    from oma_host.acp_server.lazy_door import serve_door

    if agents.problem is not None:
        logging.getLogger(__name__).warning("no session can start: %s", agents.problem)

    def opened(editor: EditorClient) -> OmaAcpAgent:
        from oma_host.acp_server.door import OmaAcpAgent

        door = OmaAcpAgent(
            agents, options.state_dir, options.session_idle_timeout_s, _telemetry(options)
        )
        door.on_connect(editor)
        return door

    return serve_door(agents, first, options.max_message_bytes, opened)


def _telemetry(options: AcpOptions) -> Telemetry:
    """The span export the command line asks for (none with
    ``--no-telemetry``), else the OTEL_* variables'."""
    from oma_host.telemetry.exporters import environment_telemetry
    from oma_host.telemetry.settings import settle_telemetry

    asked = (
        options.telemetry_endpoint is not None
        or options.telemetry_capture_content is not None
        or options.no_telemetry
    )
    if not asked:
        return environment_telemetry()
    return settle_telemetry(
        endpoint=options.telemetry_endpoint,
        capture_content=options.telemetry_capture_content,
        explicit=options.telemetry_endpoint is not None,
        export=False if options.no_telemetry else None,
    )
