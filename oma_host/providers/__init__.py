"""The provider registry: provider name → adapter, imported on first use so a
host that never calls a provider never imports its module."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from oma_host.core.errors import InvalidParamsError
from oma_host.providers.base import LLMAdapter

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

# name → "module:factory". The factory takes the AgentConfig and returns an adapter.
_REGISTRY: dict[str, str] = {
    "anthropic": "oma_host.providers.anthropic:AnthropicAdapter",
    "azure": "oma_host.providers.azure:azure_adapter",
    "bedrock": "oma_host.providers.bedrock:BedrockAdapter",
    "gemini": "oma_host.providers.gemini:GeminiAdapter",
    "openai": "oma_host.providers.openai_family:openai_adapter",
    "test": "oma_host.testing.recording:shared_recording_adapter",
}

DEFAULT_PROVIDER = "anthropic"


def available_providers() -> list[str]:
    return sorted(_REGISTRY)


def check_provider(name: str | None, where: str = "config.provider") -> str:
    """The provider an agent will use; unknown names are InvalidParams."""
    provider = name or DEFAULT_PROVIDER
    if provider not in _REGISTRY:
        known = ", ".join(available_providers())
        raise InvalidParamsError(
            f"{where}: provider {provider!r} is not available in this build (available: {known})"
        )
    return provider


def get_adapter(config: AgentConfig) -> LLMAdapter:
    """The adapter for an LLM-backed agent's provider."""
    module_name, factory_name = _REGISTRY[check_provider(config.provider)].split(":")
    factory = getattr(importlib.import_module(module_name), factory_name)
    adapter: LLMAdapter = factory(config)
    return adapter
