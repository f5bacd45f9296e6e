"""External backends behind the string-only boundary (docs/protocol.md, "External backends").

Process and ACP agents carry text only. Importing this package registers the
``"process"`` and ``"acp"`` kinds with the core's backend registry
(:mod:`oma_host.core.backends`), neither accepting structured input, so the
core refuses a message list or content blocks before a backend is built.
Nothing else is imported here: a bridge module (and, for ACP, the
``agent-client-protocol`` library, a few hundred milliseconds to import) loads
when the first agent of its kind runs.

The bridges import the core and nothing above it; the rules they share live
in :mod:`oma_host.bridges.common` and :mod:`oma_host.process.groups`.
"""

from __future__ import annotations

from oma_host.core.backends import Backend, BackendContext, BackendEntry, register_backend
from oma_host.core.config import AcpBackend, AgentConfig, ProcessBackend


def _process(config: AgentConfig, context: BackendContext) -> Backend:
    from oma_host.bridges.process import ProcessBridge

    assert isinstance(config.backend, ProcessBackend)
    return ProcessBridge(config, config.backend)


def _acp(config: AgentConfig, context: BackendContext) -> Backend:
    from oma_host.bridges.acp.session import AcpBridge

    assert isinstance(config.backend, AcpBackend)
    return AcpBridge(
        config,
        config.backend,
        permission_handler=context.permission_handler,
        session_link=context.session_link,
        editor=context.editor,
    )


# A process agent is fresh every run; an ACP agent keeps its session between runs.
register_backend(BackendEntry("process", _process, accepts_structured=False, keeps_session=False))
register_backend(
    BackendEntry("acp", _acp, accepts_structured=False, keeps_session=True, label="an ACP backend")
)
