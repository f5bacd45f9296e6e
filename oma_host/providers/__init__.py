"""The providers this host offers, and each agent's adapter.

Offered providers come from :mod:`oma_host.core.provider_facts`; an adapter's
module is imported through :mod:`oma_host.core.plugins` on first use, so a host
that never calls a provider never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oma_host.core.errors import InvalidParamsError
from oma_host.core.provider_facts import (
    DEFAULT_PROVIDER,
    ProviderFacts,
    offered_providers,
    provider_facts,
)
from oma_host.providers.base import LLMAdapter

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

__all__ = ["DEFAULT_PROVIDER", "available_providers", "check_provider", "get_adapter"]


def available_providers() -> list[str]:
    return sorted(facts.name for facts in offered_providers())


def offered_facts(name: str | None, where: str = "config.provider") -> ProviderFacts:
    """The descriptor of the provider an agent will use; a provider unknown
    or not offered by this host is InvalidParams."""
    provider = name or DEFAULT_PROVIDER
    facts = provider_facts(provider)
    if facts is not None and not facts.offered():
        raise InvalidParamsError(
            f"{where}: provider {provider!r} is offered only when the host is started "
            f"with {facts.offered_when}=1 in its environment"
        )
    if facts is None:
        known = ", ".join(available_providers())
        raise InvalidParamsError(
            f"{where}: provider {provider!r} is not available in this build (available: {known})"
        )
    return facts


def check_provider(name: str | None, where: str = "config.provider") -> str:
    """The provider an agent will use; unknown names are InvalidParams."""
    return offered_facts(name, where).name


def get_adapter(config: AgentConfig) -> LLMAdapter:
    """The adapter for an LLM-backed agent's provider."""
    from oma_host.core.plugins import adapter_factory  # light, but not needed to answer initialize

    adapter: LLMAdapter = adapter_factory(offered_facts(config.provider).name)(config)
    return adapter
