"""A provider's model list from its own list endpoint (``models/list``).

:data:`LISTERS` has one lister per provider whose descriptor has a
``model_list``; keys and endpoints are found as an agent's are, and failures
are the usual :class:`ProviderError` kinds.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from oma_host.core.provider_facts import PROVIDERS, provider_facts
from oma_host.providers.base import ModelInfo, ProviderError, malformed_reply

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

__all__ = ["LISTERS", "ModelInfo", "list_models"]

# Anthropic pages its list; more pages than this is not a model list.
_MAX_PAGES = 20


Lister = Callable[["AgentConfig"], Awaitable[list[ModelInfo]]]


async def fetch_json(url: str, headers: dict[str, str], provider: str) -> Any:
    """GET ``url`` as JSON, with the providers' retries and error kinds."""
    # Imported here: the JSON-RPC door warms this module up after initialize,
    # and a host that never lists models should not load httpx for it.
    from oma_host.providers.http import request_json

    return await request_json(url, headers, None, provider=provider, method="GET")


async def list_models(config: AgentConfig) -> list[ModelInfo]:
    """The models of ``config.provider`` (which the caller has checked)."""
    provider = config.provider or ""
    facts = provider_facts(provider)
    if facts is None or facts.model_list is None:
        known = sorted(f.name for f in PROVIDERS if f.model_list is not None)
        raise ProviderError(
            f"{provider}: this provider has no model list (models/list knows {', '.join(known)})",
            kind="unsupported",
        )
    return await LISTERS[provider](config)


async def anthropic_models(config: AgentConfig) -> list[ModelInfo]:
    from oma_host.providers import anthropic

    headers = anthropic.headers(config)
    base = anthropic.base_url(config) + "/v1/models?limit=1000"
    models: list[ModelInfo] = []
    url = base
    for _ in range(_MAX_PAGES):
        data = await fetch_json(url, headers, "anthropic")
        with malformed_reply("anthropic"):
            for entry in data["data"]:
                model: ModelInfo = {"id": str(entry["id"])}
                if entry.get("display_name"):
                    model["displayName"] = str(entry["display_name"])
                if entry.get("created_at"):
                    model["created"] = str(entry["created_at"])
                models.append(model)
            if not data.get("has_more") or not data.get("last_id"):
                return models
            url = f"{base}&after_id={quote(str(data['last_id']))}"
    return models


def _openai_list(data: Any) -> list[ModelInfo]:
    models: list[ModelInfo] = []
    for entry in data["data"]:
        model: ModelInfo = {"id": str(entry["id"])}
        if entry.get("owned_by"):
            model["ownedBy"] = str(entry["owned_by"])
        if isinstance(entry.get("created"), int):
            model["created"] = entry["created"]
        models.append(model)
    return models


async def openai_models(config: AgentConfig) -> list[ModelInfo]:
    from oma_host.providers.openai_target import openai_target

    target = openai_target(config)
    data = await fetch_json(target.base_url + "/models", target.headers(), target.provider)
    with malformed_reply(target.provider):
        return _openai_list(data)


async def azure_models(config: AgentConfig) -> list[ModelInfo]:
    """The models of the resource (Azure answers its base models here; the
    deployments, which ``model`` names, are the resource's own names for them)."""
    from oma_host.providers.azure import azure_target

    target = azure_target(config)
    data = await fetch_json(target.base_url + "/models", target.headers(), target.provider)
    with malformed_reply(target.provider):
        return _openai_list(data)


async def gemini_models(config: AgentConfig) -> list[ModelInfo]:
    from oma_host.providers.gemini import list_models as gemini_list

    return await gemini_list(config)


# The lister of each provider whose descriptor has a ``model_list``.
LISTERS: dict[str, Lister] = {
    "anthropic": anthropic_models,
    "openai": openai_models,
    "gemini": gemini_models,
    "azure": azure_models,
}
