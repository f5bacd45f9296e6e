"""oma-host: structured agent input for editors and tools.

The public API is re-exported here and imported on first use, so that
spawning the host (which needs none of it to answer ``initialize``) stays fast::

    from oma_host import Agent, OpenMultiAgent, InvalidMessageError
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oma_host.abort import AbortSignal
    from oma_host.agent import Agent
    from oma_host.config import AgentConfig
    from oma_host.errors import (
        AgentNotFoundError,
        InvalidMessageError,
        InvalidParamsError,
        OmaError,
    )
    from oma_host.hooks import AfterRunContext, BeforeRunContext
    from oma_host.messages import LLMMessage
    from oma_host.orchestrator import OpenMultiAgent

__version__ = "0.1.0"

_EXPORTS = {
    "Agent": "oma_host.agent",
    "AbortSignal": "oma_host.abort",
    "AgentConfig": "oma_host.config",
    "OmaError": "oma_host.errors",
    "InvalidMessageError": "oma_host.errors",
    "InvalidParamsError": "oma_host.errors",
    "AgentNotFoundError": "oma_host.errors",
    "BeforeRunContext": "oma_host.hooks",
    "AfterRunContext": "oma_host.hooks",
    "LLMMessage": "oma_host.messages",
    "OpenMultiAgent": "oma_host.orchestrator",
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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'oma_host' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
