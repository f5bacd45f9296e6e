"""The registry of what plugs into the core: each backend kind and provider adapter, named once.

The core imports nothing above it; this module alone imports those layers, by
name and on first use, so startup stays light.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from oma_host.core.errors import InvalidParamsError

if TYPE_CHECKING:
    from oma_host.core.backends import BackendEntry
    from oma_host.core.config import AgentConfig
    from oma_host.core.messages import LLMMessage

# Each backend kind a config may name (the closed union
# ``oma_host.core.config.BackendConfig``, and "llm" for a config without a
# ``backend``): the ``BackendEntry`` that declares it, as "module:attribute".
# The module is light; it imports the backend itself when one is built.
BACKENDS: dict[str, str] = {
    "llm": "oma_host.llm:BACKEND",
    "process": "oma_host.bridges:PROCESS",
    "acp": "oma_host.bridges:ACP",
}

# Each provider's adapter factory (taking the AgentConfig), by the name of its
# descriptor in ``oma_host.core.provider_facts.PROVIDERS``.
ADAPTERS: dict[str, str] = {
    "anthropic": "oma_host.providers.anthropic:AnthropicAdapter",
    "openai": "oma_host.providers.openai_family:openai_adapter",
    "gemini": "oma_host.providers.gemini:GeminiAdapter",
    "azure": "oma_host.providers.azure:azure_adapter",
    "bedrock": "oma_host.providers.bedrock:BedrockAdapter",
    "test": "oma_host.testing.recording:shared_recording_adapter",
}


def load(reference: str) -> object:
    """The attribute a "module:attribute" reference names, its module imported."""
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def backend_entry(config: AgentConfig) -> BackendEntry:
    """The entry for ``config``'s backend kind; InvalidParams for a kind this build lacks."""
    from oma_host.core.backends import BackendEntry, backend_kind

    kind = backend_kind(config)
    reference = BACKENDS.get(kind)
    if reference is None:
        raise InvalidParamsError(f"backend kind {kind!r} is not available in this build")
    entry = load(reference)
    assert isinstance(entry, BackendEntry) and entry.kind == kind, reference
    return entry


def check_agent_config(config: AgentConfig) -> list[LLMMessage]:
    """Everything an Agent refuses at construction, checked without building
    one: ``config.history`` must pass the guard (the agent's private copy is
    returned), and the backend's entry refuses a config it could never run
    (for an LLM agent: an unknown provider or tool, an invalid outputSchema)."""
    from oma_host.core.guard import guard_messages

    history = config.history
    guarded = [] if history is None or history == [] else guard_messages(history, "config.history")
    entry = backend_entry(config)
    if entry.check_config is not None:
        entry.check_config(config)
    return guarded


def adapter_factory(provider: str) -> Callable[[AgentConfig], Any]:
    """The factory of ``provider``'s adapter (a name of ``PROVIDERS``, checked by the caller)."""
    factory = load(ADAPTERS[provider])
    assert callable(factory), ADAPTERS[provider]
    return factory
