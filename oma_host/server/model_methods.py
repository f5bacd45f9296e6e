"""``models/list``: a provider's model list for an editor's picker, cached for the session.

A failed fetch is -32003 ``ProviderError`` with the run failures' ``kind`` and
the HTTP ``status``, and is not cached.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from oma_host.core.config import AgentConfig
from oma_host.core.errors import ErrorCode
from oma_host.core.redact import Redactor
from oma_host.providers import DEFAULT_PROVIDER, check_provider
from oma_host.providers.base import ProviderError
from oma_host.providers.model_list import ModelInfo, list_models
from oma_host.server.context import RequestContext
from oma_host.server.models import ModelsListParams
from oma_host.server.registry import Method, handles

if TYPE_CHECKING:
    from oma_host.server.state import SessionState


class ModelsListResult(TypedDict):
    provider: str
    models: list[ModelInfo]


_Key = tuple[str, str | None, str | None]
# Each session's lists, dropped with the session. A fetch in flight is shared
# by the requests that ask for the same list meanwhile.
_CACHES: weakref.WeakKeyDictionary[SessionState, dict[_Key, asyncio.Task[list[ModelInfo]]]] = (
    weakref.WeakKeyDictionary()
)


def _where(ctx: RequestContext, params: ModelsListParams) -> AgentConfig:
    """The provider, base URL and key variable to ask with, as an agent config."""
    defaults = ctx.state.defaults
    provider = check_provider(
        params.provider or (defaults.provider if defaults else None), ctx.where("provider")
    )
    base_url = params.base_url
    same_provider = defaults is not None and (defaults.provider or DEFAULT_PROVIDER) == provider
    if base_url is None and same_provider and defaults is not None:
        base_url = defaults.base_url
    return AgentConfig.model_validate(
        {
            "name": "models/list",
            "provider": provider,
            "baseURL": base_url,
            "apiKeyEnv": params.api_key_env,
        }
    )


@handles(Method.MODELS_LIST, raises=(ErrorCode.PROVIDER_ERROR,))
async def models_list(ctx: RequestContext, params: ModelsListParams) -> ModelsListResult:
    """The provider's models from its list endpoint, cached for the session;
    a failure is -32003 `ProviderError` with `data.kind` (and `data.status`)."""
    config = _where(ctx, params)
    provider = config.provider or DEFAULT_PROVIDER
    cache = _CACHES.setdefault(ctx.state, {})
    key = (provider, config.base_url, config.api_key_env)
    task = cache.get(key)
    if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
        task = cache[key] = asyncio.ensure_future(list_models(config))
    try:
        models = await asyncio.shield(task)
    except ProviderError as error:
        if cache.get(key) is task:  # a failure is not kept: the next call asks again
            del cache[key]
        message = Redactor.for_config(config).redact(str(error))
        raise ProviderError(message, error.status_code, error.kind) from None
    return {"provider": provider, "models": list(models)}
