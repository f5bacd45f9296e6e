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

_EXPORTS = {
    "Agent": "oma_host.core.agent",
    "AbortSignal": "oma_host.core.abort",
    "AgentConfig": "oma_host.core.config",
    "OmaError": "oma_host.core.errors",
    "InvalidMessageError": "oma_host.core.errors",
    "InvalidParamsError": "oma_host.core.errors",
    "AgentNotFoundError": "oma_host.core.errors",
    "BeforeRunContext": "oma_host.core.hooks",
    "AfterRunContext": "oma_host.core.hooks",
    "LLMMessage": "oma_host.core.messages",
    "OpenMultiAgent": "oma_host.orchestration.one_off",
}

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
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oma_host' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
