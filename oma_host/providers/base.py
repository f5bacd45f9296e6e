"""The interface every LLM provider adapter implements, and its data types.

An adapter turns LLMMessages into one provider request and the reply back into
content blocks: ``chat`` returns it whole, ``stream`` yields
:data:`ProviderEvent` items ending with ``done``. These are the adapter's
stream, not the run's events. A block an adapter cannot represent raises
:class:`ProviderError`: it is never dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NotRequired, Protocol, TypedDict
from urllib.parse import urlsplit

import typing_extensions

from oma_host.core.credentials import key_for
from oma_host.core.errors import ErrorCode, OmaError, ProviderErrorKind
from oma_host.core.provider_facts import DEFAULT_PROVIDER, provider_facts

if TYPE_CHECKING:
    from oma_host.core.config import AgentConfig
    from oma_host.core.messages import ContentBlock, LLMMessage
    from oma_host.core.provider_facts import ProviderFacts
    from oma_host.core.results import TokenUsage
    from oma_host.core.tools import ToolSpec


class ProviderError(OmaError):
    """A provider request that failed: a run ends on the normal failure path
    (``errorInfo.kind`` is ``kind``); a request made for the client (not a
    run) is answered -32003 ``ProviderError`` with ``data.kind``, and
    ``data.status``, the HTTP status, when the provider answered with one."""

    code = ErrorCode.PROVIDER_ERROR

    def __init__(
        self, message: str, status_code: int | None = None, kind: ProviderErrorKind = "provider"
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.kind = kind

    def error_data(self) -> dict[str, object]:
        data = {**super().error_data(), "kind": self.kind}
        if self.status_code is not None:
            data["status"] = self.status_code
        return data


@dataclass(frozen=True)
class ChatOptions:
    model: str
    system_prompt: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    base_url: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    # The messages sent with these options have passed the shape guard already
    # (the agent loop's have), so the adapter does not check them again.
    guarded: bool = False

    def sampling(self, top_p: str = "top_p") -> dict[str, float]:
        """``temperature`` and ``top_p``, those that are set, under the wire's
        names (Gemini and Bedrock call the second ``topP``)."""
        fields: dict[str, float] = {}
        if self.temperature is not None:
            fields["temperature"] = self.temperature
        if self.top_p is not None:
            fields[top_p] = self.top_p
        return fields

    @classmethod
    def from_config(cls, config: AgentConfig) -> ChatOptions:
        return cls(
            model=config.model or "",
            system_prompt=config.system_prompt,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            top_p=config.top_p,
            base_url=config.base_url,
        )


@dataclass
class LLMResponse:
    content: list[ContentBlock]
    usage: TokenUsage
    stop_reason: str = "end_turn"
    # The model the provider says answered, which may differ from the one
    # asked (an alias answers with its dated version); None when the reply
    # names none (Bedrock's Converse never does). See :func:`answered_model`.
    model: str | None = None


def answered_model(value: object) -> str | None:
    """The model a reply names (its ``model``, Gemini's ``modelVersion``):
    a non-empty string, else None (a compatible server that leaves it out
    or empty, or sends something else there)."""
    return value if isinstance(value, str) and value else None


class ModelInfo(typing_extensions.TypedDict):
    """One model of a provider's list (``models/list``); typing_extensions'
    TypedDict, which pydantic reads on Python 3.11."""

    id: str
    displayName: NotRequired[str]
    ownedBy: NotRequired[str]
    created: NotRequired[str | int]


class ProviderText(TypedDict):
    type: Literal["text"]
    data: str


class ProviderReasoning(TypedDict):
    type: Literal["reasoning"]
    data: str


class ProviderToolUse(TypedDict):
    """A complete tool_use block, as the adapter put it in the reply's content
    (with any provider metadata it carries)."""

    type: Literal["tool_use"]
    data: ContentBlock


class ProviderDone(TypedDict):
    type: Literal["done"]
    data: LLMResponse


# What ``LLMAdapter.stream`` yields. (typing's TypedDict: these are never
# schema types, and the module is on the startup path.)
ProviderEvent = ProviderText | ProviderReasoning | ProviderToolUse | ProviderDone


def checked_messages(messages: list[LLMMessage], options: ChatOptions) -> list[LLMMessage]:
    """What an adapter's entry points send: ``messages`` after the one shape
    guard (docs/protocol.md, "The shape guard"), so an adapter called
    directly with a malformed message raises InvalidMessageError naming its
    path, not an AttributeError from deep inside the mapping. Skipped for
    ``guarded`` options."""
    if options.guarded:
        return messages
    # Imported here: the registry imports this module to answer initialize,
    # which must not load pydantic (the message types need it).
    from oma_host.core.guard import guard_messages

    return guard_messages(messages, "messages")


# What reading a reply of the wrong shape raises (a missing field, a wrong type).
MALFORMED = (KeyError, IndexError, TypeError, ValueError, AttributeError)


def malformed_error(provider: str, error: Exception) -> ProviderError:
    """The ProviderError for ``error``, one of :data:`MALFORMED`."""
    return ProviderError(
        f"{provider}: the reply has an unexpected shape ({type(error).__name__}: {error})",
        kind="malformed",
    )


@contextmanager
def malformed_reply(provider: str) -> Iterator[None]:
    """Reading a reply of the wrong shape (a missing field, a wrong type) is a
    ProviderError of kind ``malformed``, not a crash. (A stream's events use
    :data:`MALFORMED` and :func:`malformed_error` inline: a context manager
    per event costs more than the event's own parsing.)"""
    try:
        yield
    except MALFORMED as error:
        raise malformed_error(provider, error) from None


def resolve_api_key(config: AgentConfig, variables: Sequence[str]) -> str | None:
    """``apiKey``, else the variable named by ``apiKeyEnv``, else the first
    of the provider's key ``variables`` that is set; a variable not set in
    the environment may have a key ``oma-host login`` stored for it."""
    if config.api_key:
        return config.api_key
    if config.api_key_env:
        return key_for(config.api_key_env)
    return next((key for name in variables if (key := key_for(name))), None)


def missing_key_error(
    provider: str, config: AgentConfig, variables: Sequence[str]
) -> ProviderError:
    if config.api_key_env:
        where = f"the environment variable {config.api_key_env} (apiKeyEnv) is not set"
    else:
        where = f"set apiKey, apiKeyEnv or {' or '.join(variables)}"
    return ProviderError(f"{provider}: no API key: {where}", kind="auth")


def configured_base_url(config: AgentConfig, facts: ProviderFacts) -> str | None:
    """The endpoint the agent names: its ``baseURL``, else the first of the
    provider's base-URL variables that is set (the ones its official SDK
    reads, :attr:`~oma_host.core.provider_facts.ProviderFacts.base_url_variables`),
    else None (the provider's default). A variable that is not an http(s)
    URL fails the request: a ProviderError of kind ``connection`` naming it."""
    from oma_host.core.provider_facts import BaseUrlError

    try:
        return facts.base_url_from(config.base_url)
    except BaseUrlError as error:
        raise ProviderError(f"{facts.name}: {error}", kind="connection") from None


def provider_base_url(config: AgentConfig, facts: ProviderFacts) -> str:
    """:func:`configured_base_url`, else the provider's default endpoint,
    without a trailing slash."""
    return (configured_base_url(config, facts) or facts.default_base_url or "").rstrip("/")


def credential_problem(config: AgentConfig) -> ProviderError | None:
    """Why an agent cannot authenticate, known before any request: an LLM
    agent with no ``apiKey`` whose provider needs a key and finds none in
    the environment or kept by ``oma-host login`` (the error its first
    request would fail with). None when a key is there or none may be needed:
    an external agent, a provider with other credentials (Bedrock's AWS
    chain), or a server of the agent's own that may take none."""
    if config.backend is not None or config.api_key:
        return None
    facts = provider_facts(config.provider or DEFAULT_PROVIDER)
    if facts is None or not facts.key_variables or facts.key_needed == "not_always":
        return None
    if facts.key_needed == "at_default_endpoint" and own_server(config, facts):
        return None
    if resolve_api_key(config, facts.key_variables) is not None:
        return None
    return missing_key_error(facts.name, config, facts.key_variables)


def own_server(config: AgentConfig, facts: ProviderFacts) -> bool:
    """Whether the agent talks to a server other than the provider's own
    (its ``baseURL`` or the SDK's variable names another host), which may
    take no key: the one reading of it, for the adapter's headers and the
    doors' credential check. A malformed variable is left to fail the
    request, where it is named."""
    try:
        base_url = configured_base_url(config, facts)
    except ProviderError:
        return True
    default_host = urlsplit(facts.default_base_url or "").hostname
    return base_url is not None and urlsplit(base_url).hostname != default_host


def required_key(config: AgentConfig, facts: ProviderFacts) -> str:
    """The key :func:`resolve_api_key` finds from the provider's key
    variables; none is a ProviderError of kind ``auth`` naming where to set it."""
    key = resolve_api_key(config, facts.key_variables)
    if key is None:
        raise missing_key_error(facts.name, config, facts.key_variables)
    return key


class LLMAdapter(Protocol):
    """What the agent loop needs from a provider."""

    name: str

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse: ...

    def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]: ...
