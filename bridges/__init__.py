"""The external backends' entries: process and ACP agents, behind the string-only boundary.

:mod:`oma_host.core.plugins` finds :data:`PROCESS` and :data:`ACP` here; neither
accepts structured input, so the core refuses it before a bridge (or the
``acp`` library) is imported.
"""

from __future__ import annotations

from oma_host.core.backends import Backend, BackendContext, BackendEntry
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
PROCESS = BackendEntry("process", _process, accepts_structured=False, keeps_session=False)
ACP = BackendEntry(
    "acp", _acp, accepts_structured=False, keeps_session=True, label="an ACP backend"
)
