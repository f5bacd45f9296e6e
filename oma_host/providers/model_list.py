"""A provider's model list, from its own list endpoint (``models/list``):
Anthropic ``GET {baseURL}/v1/models`` (every page), OpenAI and compatible
servers ``GET {baseURL}/models``, Azure ``GET .../openai/v1/models``. Keys
and endpoints are found as an agent's are (``apiKeyEnv``, else the standard
variables); a failure is a :class:`ProviderError` of the usual kinds.

Each provider's lister is registered in :data:`LISTERS` by name, imported on
first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, NotRequired
from urllib.parse import quote

from typing_extensions import TypedDict

from oma_host.providers.base import (
    ProviderError,
    malformed_reply,
    missing_key_error,
    resolve_api_key,
)

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig

_ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
# Anthropic pages its list; more pages than this is not a model list.
_MAX_PAGES = 20


class ModelInfo(TypedDict):
    id: str
    displayName: NotRequired[str]
    ownedBy: NotRequired[str]
    created: NotRequired[str | int]


Lister = Callable[["AgentConfig"], Awaitable[list[ModelInfo]]]

# provider name -> "module:function" taking the AgentConfig that says where
# to ask (provider, baseURL, apiKeyEnv) and answering its models.
LISTERS: dict[str, str] = {
    "anthropic": "oma_host.providers.model_list:anthropic_models",
    "openai": "oma_host.providers.model_list:openai_models",
    "azure": "oma_host.providers.model_list:azure_models",
    "gemini": "oma_host.providers.gemini:list_models",
}


async def fetch_json(url: str, headers: dict[str, str], provider: str) -> Any:
    """GET ``url`` as JSON, with the providers' retries and error kinds."""
    # Imported here: the JSON-RPC door warms this module up after initialize,
    # and a host that never lists models should not load httpx for it.
    from oma_host.providers.http import request_json

    return await request_json(url, headers, None, provider=provider, method="GET")


async def list_models(config: AgentConfig) -> list[ModelInfo]:
    """The models of ``config.provider`` (which the caller has checked)."""
    provider = config.provider or ""
    spec = LISTERS.get(provider)
    if spec is None:
        raise ProviderError(
            f"{provider}: this provider has no model list (models/list knows "
            f"{', '.join(sorted(LISTERS))})",
            kind="unsupported",
        )
    module_name, function_name = spec.split(":")
    lister: Lister = getattr(importlib.import_module(module_name), function_name)
    return await lister(config)


async def anthropic_models(config: AgentConfig) -> list[ModelInfo]:
    from oma_host.providers.anthropic import API_VERSION, DEFAULT_BASE_URL

    key = resolve_api_key(config, _ANTHROPIC_KEY_ENV)
    if key is None:
        raise missing_key_error("anthropic", config, _ANTHROPIC_KEY_ENV)
    headers = {"x-api-key": key, "anthropic-version": API_VERSION}
    base = (config.base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/models?limit=1000"
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
