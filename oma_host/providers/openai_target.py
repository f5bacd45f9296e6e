"""Where an OpenAI-family agent sends its requests, which API it speaks, how it authenticates.

``api`` defaults to ``"responses"`` for api.openai.com and Azure, ``"chat"``
for every other base URL. The output limit's field name follows the server, not
the API: OpenAI and Azure take ``max_completion_tokens``, the compatible
servers still read ``max_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from oma_host.core.provider_facts import facts_of
from oma_host.providers.base import (
    ProviderError,
    configured_base_url,
    missing_key_error,
    own_server,
    resolve_api_key,
)

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig, OpenAIApi
    from oma_host.core.results import TokenUsage

_OPENAI = facts_of("openai")


@dataclass(frozen=True)
class OpenAITarget:
    """One agent's endpoint: ``provider`` names it in errors, ``base_url`` has
    no trailing slash, ``official`` says the server is OpenAI's or Azure's
    (``max_completion_tokens``, reasoning items), ``headers`` builds the
    authentication headers per request (a missing key fails the run there)."""

    provider: str
    base_url: str
    api: OpenAIApi
    official: bool
    headers: Callable[[], dict[str, str]]

    @property
    def token_limit_field(self) -> str:
        """Chat Completions' name for the output limit on this server."""
        return "max_completion_tokens" if self.official else "max_tokens"


def is_openai_host(base_url: str) -> bool:
    return (urlsplit(base_url).hostname or "").lower() == "api.openai.com"


def openai_target(config: AgentConfig) -> OpenAITarget:
    """The target of a ``provider: "openai"`` agent; a malformed
    ``OPENAI_BASE_URL`` fails its requests (``headers`` is asked first)."""
    try:
        configured = configured_base_url(config, _OPENAI)
        refused = None
    except ProviderError as error:
        configured, refused = None, error
    base_url = (configured or _OPENAI.default_base_url or "").rstrip("/")
    official = is_openai_host(base_url)

    def headers() -> dict[str, str]:
        if refused is not None:
            raise refused
        key = resolve_api_key(config, _OPENAI.key_variables)
        if key is None:
            if own_server(config, _OPENAI):  # local compatible servers need none
                return {}
            raise missing_key_error(_OPENAI.name, config, _OPENAI.key_variables)
        return {"authorization": f"Bearer {key}"}

    api: OpenAIApi = config.api or ("responses" if official else "chat")
    return OpenAITarget(_OPENAI.name, base_url, api, official, headers)


def openai_too_long(_status: int, body: Any, _message: str) -> bool:
    """OpenAI's and Azure's answer to a request over the model's window, on
    both APIs: an error whose ``code`` is ``context_length_exceeded``."""
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and error.get("code") == "context_length_exceeded"


def tool_input(provider: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call's ``arguments`` (JSON text, empty for none) as its input
    object; text that is not a JSON object is a ``malformed`` ProviderError."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        raise ProviderError(
            f"{provider}: the arguments of tool call {name!r} are not valid JSON", kind="malformed"
        ) from None
    if not isinstance(parsed, dict):
        raise ProviderError(
            f"{provider}: the arguments of tool call {name!r} are not a JSON object",
            kind="malformed",
        )
    return parsed


def token_usage(
    input_tokens: Any, output_tokens: Any, cached_tokens: Any = 0, reasoning_tokens: Any = 0
) -> TokenUsage:
    """OpenAI's counts as TokenUsage. OpenAI counts cached input inside the
    input tokens; TokenUsage keeps it apart (``cache_read_input_tokens``, as
    Anthropic reports it), so ``input_tokens`` is the uncached rest. The
    optional counts appear when they are not zero."""
    cached = int(cached_tokens or 0)
    usage: TokenUsage = {
        "input_tokens": max(0, int(input_tokens or 0) - cached),
        "output_tokens": int(output_tokens or 0),
    }
    if cached:
        usage["cache_read_input_tokens"] = cached
    if reasoning := int(reasoning_tokens or 0):
        usage["reasoning_tokens"] = reasoning
    return usage


def usage_of(data: dict[str, Any] | None, input_field: str, output_field: str) -> TokenUsage:
    """A reply's ``usage`` as TokenUsage. Chat Completions calls its counts
    ``prompt_tokens`` and ``completion_tokens``, Responses ``input_tokens``
    and ``output_tokens``; each count's ``*_details`` holds the cached and the
    reasoning tokens."""
    data = data or {}
    return token_usage(
        data.get(input_field),
        data.get(output_field),
        details(data, f"{input_field}_details", "cached_tokens"),
        details(data, f"{output_field}_details", "reasoning_tokens"),
    )


def details(usage: dict[str, Any], field: str, count: str) -> Any:
    """``usage[field][count]``, or None where the server leaves it out."""
    nested = usage.get(field)
    return nested.get(count) if isinstance(nested, dict) else None
