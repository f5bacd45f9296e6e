"""External backends behind the string-only boundary (PROTOCOL.md section 9).

Process and ACP agents carry text only. The boundary itself (structured input
raises InvalidMessageError before anything is spawned; a beforeRun hook may
rewrite the prompt but not the messages) is enforced in ``oma_host.core.agent``
before a backend is ever built; this package holds what the bridges share and
the factory that picks one. Bridges are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oma_host.core.agent import Backend, PermissionHandler
    from oma_host.core.config import AgentConfig


def compose_prompt(system_prompt: str | None, text: str) -> str:
    """The role prompt and the user's text, joined by a blank line."""
    if system_prompt:
        return f"{system_prompt}\n\n{text}"
    return text


def make_external_backend(
    config: AgentConfig, *, permission_handler: PermissionHandler | None = None
) -> Backend:
    """The bridge for ``config.backend`` (the config must have one).
    ``permission_handler`` answers an ACP agent's ``ask-client`` permission
    requests; other bridges ignore it."""
    backend = config.backend
    if backend is None:
        raise ValueError(f"agent {config.name!r} has no external backend")
    if backend.kind == "process":
        from bridges.process import ProcessBridge

        return ProcessBridge(config, backend)
    if backend.kind == "acp":
        from bridges.acp.session import AcpBridge

        return AcpBridge(config, backend, permission_handler=permission_handler)
    raise ValueError(f"backend kind {backend.kind!r} is not available in this build")
