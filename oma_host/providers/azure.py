"""Azure OpenAI on its v1 endpoint: the OpenAI wire, no ``api-version``.

The deployment name is the ``model``; the endpoint may be the resource's root
or the full v1 URL. Authentication is the ``api-key`` header, else a Microsoft
Entra ID token.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from oma_host.core.provider_facts import facts_of
from oma_host.providers.base import (
    LLMAdapter,
    ProviderError,
    configured_base_url,
    resolve_api_key,
)
from oma_host.providers.openai_family import adapter_for
from oma_host.providers.openai_target import OpenAITarget

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig, OpenAIApi

_FACTS = facts_of("azure")
(ENDPOINT_ENV,) = _FACTS.base_url_variables
# The api-key's variable, then the Entra ID token's.
KEY_ENV, TOKEN_ENV = _FACTS.key_variables
_V1 = "/openai/v1"


def v1_base_url(endpoint: str) -> str:
    """The v1 base URL of an Azure OpenAI endpoint given as its root or in full."""
    base = endpoint.strip().rstrip("/")
    if base.endswith(_V1):
        return base
    if base.endswith("/openai"):
        return base + "/v1"
    return base + _V1


def azure_target(config: AgentConfig) -> OpenAITarget:
    """The agent's endpoint and credentials; a missing endpoint or key fails
    the request (``headers`` is asked first), so the run ends with a clear
    result rather than the agent being refused."""
    try:
        endpoint, refused = configured_base_url(config, _FACTS) or "", None
    except ProviderError as error:  # AZURE_OPENAI_ENDPOINT is not a URL
        endpoint, refused = "", error

    def headers() -> dict[str, str]:
        if refused is not None:
            raise refused
        if not endpoint:
            raise ProviderError(
                "azure: no endpoint: set baseURL (https://NAME.openai.azure.com/openai/v1/) "
                f"or {ENDPOINT_ENV}",
                kind="connection",
            )
        key = resolve_api_key(config, (KEY_ENV,))
        if key is not None:
            return {"api-key": key}
        token = None if config.api_key_env else os.environ.get(TOKEN_ENV)
        if token:
            return {"authorization": f"Bearer {token}"}
        where = (
            f"the environment variable {config.api_key_env} (apiKeyEnv) is not set"
            if config.api_key_env
            else f"set apiKey, apiKeyEnv, {KEY_ENV} or {TOKEN_ENV}"
        )
        raise ProviderError(f"azure: no API key: {where}", kind="auth")

    api: OpenAIApi = config.api or "responses"
    base_url = v1_base_url(endpoint) if endpoint else ""
    return OpenAITarget(_FACTS.name, base_url, api, True, headers)


def azure_adapter(config: AgentConfig) -> LLMAdapter:
    """The registry's factory for ``provider: "azure"``."""
    return adapter_for(config, azure_target(config))
