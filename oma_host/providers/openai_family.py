"""The OpenAI family's adapter factories: Chat Completions or Responses, by ``api``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oma_host.providers.base import LLMAdapter
from oma_host.providers.openai_target import OpenAITarget, openai_target

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig


def adapter_for(config: AgentConfig, target: OpenAITarget) -> LLMAdapter:
    """The Chat Completions or the Responses adapter for ``target``."""
    if target.api == "responses":
        from oma_host.providers.openai_responses import ResponsesAdapter

        return ResponsesAdapter(config, target)
    from oma_host.providers.openai import OpenAIAdapter

    return OpenAIAdapter(config, target)


def openai_adapter(config: AgentConfig) -> LLMAdapter:
    """The registry's factory for ``provider: "openai"``."""
    return adapter_for(config, openai_target(config))
