"""oma-host: structured agent input for editors and tools.

The public API is re-exported here and imported on first use, so that
spawning the host (which needs none of it to answer ``initialize``) stays fast::

    from oma_host import Agent, OpenMultiAgent, InvalidMessageError
"""

from __future__ import annotations

from oma_host.core.version import __version__

# typing.TYPE_CHECKING without importing typing: ``oma-host acp`` answers
# initialize in the time ``typing`` alone takes to import.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from oma_host.core.abort import AbortSignal
    from oma_host.core.agent import Agent
    from oma_host.core.config import AgentConfig
    from oma_host.core.errors import (
        AgentNotFoundError,
        InvalidMessageError,
        InvalidParamsError,
        OmaError,
    )
    from oma_host.core.hooks import AfterRunContext, BeforeRunContext
    from oma_host.core.messages import LLMMessage
    from oma_host.orchestration.one_off import OpenMultiAgent

__all__ = [
    "AbortSignal",
    "AfterRunContext",
    "Agent",
    "AgentConfig",
    "AgentNotFoundError",
    "BeforeRunContext",
    "InvalidMessageError",
    "InvalidParamsError",
    "LLMMessage",
    "OmaError",
    "OpenMultiAgent",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Plain imports, not names in strings: tests/test_layers.py reads each.
    if name == "Agent":
        from oma_host.core.agent import Agent

        return Agent
    if name == "OpenMultiAgent":
        from oma_host.orchestration.one_off import OpenMultiAgent

        return OpenMultiAgent
    if name == "AgentConfig":
        from oma_host.core.config import AgentConfig

        return AgentConfig
    if name in ("OmaError", "InvalidMessageError", "InvalidParamsError", "AgentNotFoundError"):
        from oma_host.core import errors

        return getattr(errors, name)
    if name in ("BeforeRunContext", "AfterRunContext"):
        from oma_host.core import hooks

        return getattr(hooks, name)
    if name == "AbortSignal":
        from oma_host.core.abort import AbortSignal

        return AbortSignal
    if name == "LLMMessage":
        from oma_host.core.messages import LLMMessage

        return LLMMessage
    raise AttributeError(f"module 'oma_host' has no attribute {name!r}")
