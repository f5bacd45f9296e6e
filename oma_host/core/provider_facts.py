"""Each provider's facts, declared once: keys, secrets, endpoint, models and auth methods.

Plain data (no pydantic, no provider module) that redaction, both doors,
``models/list`` and the docs read; adapters are named in
:mod:`oma_host.core.plugins`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from oma_host.core.model_facts import (
    AZURE_MODELS,
    BEDROCK_MODELS,
    CLAUDE_MODELS,
    GEMINI_MODELS,
    OPENAI_MODELS,
    ModelFacts,
    ModelTable,
)

# The variable that offers the in-process ``test`` provider when set to "1".
TEST_PROVIDER_VARIABLE = "OMA_HOST_TEST_PROVIDER"

# AWS's credential variables, as every AWS SDK reads them (providers/sigv4.py).
AWS_ACCESS_KEY_ID = "AWS_ACCESS_KEY_ID"
AWS_SECRET_ACCESS_KEY = "AWS_SECRET_ACCESS_KEY"
AWS_SESSION_TOKEN = "AWS_SESSION_TOKEN"


@dataclass(frozen=True)
class ModelList:
    """Where ``models/list`` asks: ``endpoint`` is the request, for the docs
    (the lister is the provider's in ``oma_host.providers.model_list``)."""

    endpoint: str


@dataclass(frozen=True)
class AuthMethod:
    """One ACP ``env_var`` auth method: ``required`` variables must all be set
    for ``authenticate`` to succeed; ``optional`` ones are read when set. All
    are secrets but the ``public`` ones (a key's id, not the key)."""

    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    public: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return "env:" + "+".join(self.required)

    def missing(self, lookup: Callable[[str], str | None]) -> list[str]:
        """The required variables ``lookup`` finds no value for."""
        return [name for name in self.required if not lookup(name)]


@dataclass(frozen=True)
class ProviderFacts:
    """One provider. ``key_variables`` hold the key (what ``apiKey`` or
    ``apiKeyEnv`` replace), in the order the adapter reads them;
    ``other_secrets`` are the other secret variables it can read (a signing
    secret, a session token), so :attr:`secret_variables` is every secret the
    provider can meet. ``auth`` defaults to one ACP method per key variable."""

    name: str
    title: str
    wire: str  # the wire format, for the docs
    # Where requests go without a ``baseURL`` (Bedrock's has a ``{region}``;
    # None: there is no default, a baseURL or a variable must say).
    default_base_url: str | None = None
    # The variables the provider's official SDK reads its endpoint from when
    # the code gives none, in the SDK's order: a config's ``baseURL`` wins
    # over them, and they over ``default_base_url`` (see base_url_from).
    base_url_variables: tuple[str, ...] = ()
    # A variable that, set to "true", makes the SDK ignore those (botocore's).
    base_url_variables_off: str | None = None
    # Its base URL may be another vendor's server speaking its wire (the
    # OpenAI-compatible ones), whose models are not those of ``models``.
    compatible_servers: bool = False
    key_variables: tuple[str, ...] = ()
    # When a request needs one of the key variables: always; only at the
    # default endpoint (a compatible server of one's own may take no key); or
    # not always (the provider has credentials besides: AWS's chain).
    key_needed: Literal["always", "at_default_endpoint", "not_always"] = "always"
    other_secrets: tuple[str, ...] = ()
    # None: no model is right for every account (Azure deployments, Bedrock ids).
    default_model: str | None = None
    model_list: ModelList | None = None
    auth: tuple[AuthMethod, ...] | None = None
    models: ModelTable = field(default_factory=ModelTable)
    # A variable that must be "1" for the provider to be offered at all.
    offered_when: str | None = None
    # Reads the secrets the provider finds outside the environment (Bedrock's
    # AWS profile files), for redaction; read when an agent's config is.
    file_secrets: Callable[[], tuple[str, ...]] | None = None
    # The request's tokens, estimated before it is sent (an agent's context
    # compaction, llm/estimate.py): characters of text per token, and the
    # tokens of one image (or file), whatever its size. The usage the
    # provider reports for each request corrects the estimate of the next.
    chars_per_token: float = 4.0
    image_tokens: int = 1_000
    # The provider's ``gen_ai.provider.name`` in the OpenTelemetry GenAI
    # conventions, where it differs from ``name`` (spans, core/spans.py).
    telemetry_name: str | None = None

    @property
    def span_name(self) -> str:
        """The provider as spans name it (``gen_ai.provider.name``)."""
        return self.telemetry_name or self.name

    @property
    def secret_variables(self) -> tuple[str, ...]:
        return self.key_variables + self.other_secrets

    def base_url_from(
        self, configured: str | None, environ: Mapping[str, str] = os.environ
    ) -> str | None:
        """The endpoint an agent with ``baseURL`` ``configured`` uses: that,
        else the first of :attr:`base_url_variables` set to a value (which
        must be an http(s) URL: :class:`BaseUrlError` names the variable
        otherwise), else None (:attr:`default_base_url`)."""
        if configured:
            return configured
        found = self.base_url_variable(environ)
        if found is None:
            return None
        name, value = found
        check_base_url(value, name)
        return value

    def serves_own_models(self, configured: str | None) -> bool:
        """Whether an agent with ``baseURL`` ``configured`` talks to a server
        of the models in :attr:`models` (not a compatible server's own)."""
        if not self.compatible_servers:
            return True
        try:
            url = self.base_url_from(configured)
        except BaseUrlError:
            return False
        if url is None:
            return True
        default_host = urlsplit(self.default_base_url or "").hostname
        return urlsplit(url).hostname == default_host

    def base_url_variable(self, environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
        """The first of :attr:`base_url_variables` set to a value, with it."""
        off = self.base_url_variables_off
        if off and environ.get(off, "").strip().lower() == "true":
            return None
        for name in self.base_url_variables:
            value = environ.get(name)
            if value:
                return name, value
        return None

    @property
    def auth_methods(self) -> tuple[AuthMethod, ...]:
        if self.auth is not None:
            return self.auth
        return tuple(AuthMethod((name,)) for name in self.key_variables)

    def offered(self) -> bool:
        """Whether this host offers the provider (read when asked, so a test
        that sets the variable in its own process is seen)."""
        return self.offered_when is None or os.environ.get(self.offered_when) == "1"

    def key_is_set(self) -> bool:
        """Whether a key is set in the environment or stored by ``oma-host login``."""
        from oma_host.core.credentials import key_for  # reads a file: only when asked

        return any(key_for(name) for name in self.key_variables)


class BaseUrlError(ValueError):
    """A base-URL variable whose value is not an http(s) URL."""


def check_base_url(value: str, variable: str) -> None:
    """Raise :class:`BaseUrlError`, naming ``variable``, unless ``value`` is
    an ``http://`` or ``https://`` URL with a host (and a numeric port, if
    any). The value shown has its secrets taken out."""
    from oma_host.core.redact import redacted_url  # the leaf redaction module

    problem = None
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme.lower() not in ("http", "https"):
        problem = "is not an http:// or https:// URL"
    elif not parts.hostname:
        problem = "has no host"
    elif not port_ok:
        problem = "has a port that is not a number from 1 to 65535"
    elif any(character.isspace() or ord(character) < 32 for character in value):
        problem = "contains whitespace or a control character"
    if problem is not None:
        raise BaseUrlError(
            f"the environment variable {variable} {problem}: {redacted_url(value)!r} "
            "(set it to the server's URL, e.g. https://gateway.example.com, or unset it)"
        )


def _aws_profile_secrets() -> tuple[str, ...]:
    from oma_host.core.aws_profile import profile_secrets  # configparser only when asked

    return profile_secrets()


# In the order the ACP door's default agent and ``oma-host demo --live`` try
# them: the first whose key is set and that has a default model.
PROVIDERS: tuple[ProviderFacts, ...] = (
    ProviderFacts(
        name="anthropic",
        title="Anthropic",
        wire="Messages (`POST /v1/messages`, SSE)",
        default_base_url="https://api.anthropic.com",
        base_url_variables=("ANTHROPIC_BASE_URL",),
        key_variables=("ANTHROPIC_API_KEY",),
        default_model="claude-sonnet-5-5",
        model_list=ModelList("`GET {baseURL}/v1/models`"),
        models=CLAUDE_MODELS,
        # Claude's tokenizer is denser than OpenAI's on English and code; an
        # image costs width x height / 750 tokens, about 1,600 at the largest
        # size Claude reads before scaling it down.
        chars_per_token=3.5,
        image_tokens=1_600,
    ),
    ProviderFacts(
        name="openai",
        title="OpenAI (and compatible servers)",
        wire="Responses on api.openai.com, Chat Completions elsewhere (SSE)",
        default_base_url="https://api.openai.com/v1",
        base_url_variables=("OPENAI_BASE_URL",),
        compatible_servers=True,
        key_variables=("OPENAI_API_KEY",),
        key_needed="at_default_endpoint",
        default_model="gpt-6.2-sol",
        model_list=ModelList("`GET {baseURL}/models`"),
        models=OPENAI_MODELS,
        # o200k: about 4 characters of English a token; a high-detail image
        # of 1024 x 1024 is 765 tokens (85 + 170 per 512-pixel tile).
        chars_per_token=4.0,
        image_tokens=765,
    ),
    ProviderFacts(
        name="gemini",
        telemetry_name="gcp.gemini",
        title="Google Gemini",
        wire="`generateContent`, `streamGenerateContent?alt=sse`",
        default_base_url="https://generativelanguage.googleapis.com",
        # google-genai's for the Gemini Developer API (GOOGLE_VERTEX_BASE_URL
        # is Vertex AI's, which this adapter does not speak).
        base_url_variables=("GOOGLE_GEMINI_BASE_URL",),
        key_variables=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        default_model="gemini-3.8-flash",
        model_list=ModelList("`GET {baseURL}/v1beta/models`"),
        models=GEMINI_MODELS,
        # 258 tokens per 768 x 768 tile of an image: four for 1024 x 1024.
        chars_per_token=4.0,
        image_tokens=1_032,
    ),
    ProviderFacts(
        name="azure",
        telemetry_name="azure.ai.openai",
        title="Azure OpenAI (v1 API)",
        wire='Responses, or Chat Completions with `api: "chat"` (SSE)',
        # openai's AzureOpenAI reads it; no default: every resource has its own.
        base_url_variables=("AZURE_OPENAI_ENDPOINT",),
        # The api-key first; without one, a Microsoft Entra ID token as a bearer token.
        key_variables=("AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN"),
        model_list=ModelList("`GET .../openai/v1/models`"),
        models=AZURE_MODELS,
        chars_per_token=4.0,  # OpenAI's models and tokenizer
        image_tokens=765,
    ),
    ProviderFacts(
        name="bedrock",
        telemetry_name="aws.bedrock",
        title="Amazon Bedrock",
        wire="Converse, ConverseStream (binary event stream)",
        default_base_url="https://bedrock-runtime.{region}.amazonaws.com",
        # botocore's: the service's own variable, then the global one.
        base_url_variables=("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"),
        base_url_variables_off="AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        # A Bedrock API key (a bearer token); without one, requests are signed
        # with the AWS credentials (the access key id is not a secret).
        key_variables=("AWS_BEARER_TOKEN_BEDROCK",),
        key_needed="not_always",
        other_secrets=(AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
        # Either credential works: the API key, or the key pair (and a
        # session token with temporary credentials). A profile in ~/.aws is
        # not an environment variable; authenticate cannot see it, but its
        # secrets are redacted like the variables'.
        file_secrets=_aws_profile_secrets,
        models=BEDROCK_MODELS,
        chars_per_token=3.5,  # Claude's models, as on Anthropic's API
        image_tokens=1_600,
        auth=(
            AuthMethod(("AWS_BEARER_TOKEN_BEDROCK",)),
            AuthMethod(
                (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY),
                optional=(AWS_SESSION_TOKEN,),
                public=(AWS_ACCESS_KEY_ID,),
            ),
        ),
    ),
    ProviderFacts(
        name="test",
        title="in-process test provider",
        wire="none: it echoes the request (models `echo`, `slow-echo`, `fail`)",
        default_model="echo",
        offered_when=TEST_PROVIDER_VARIABLE,
    ),
)

DEFAULT_PROVIDER = "anthropic"
_BY_NAME = {facts.name: facts for facts in PROVIDERS}


def provider_facts(name: str) -> ProviderFacts | None:
    """The provider called ``name``, offered or not."""
    return _BY_NAME.get(name)


def facts_of(name: str) -> ProviderFacts:
    """The facts of a provider the code names itself (a KeyError is a bug)."""
    return _BY_NAME[name]


def model_facts(provider: str | None, model: str | None) -> ModelFacts | None:
    """What the provider's table says of ``model`` (None: nothing)."""
    facts = provider_facts(provider or DEFAULT_PROVIDER)
    if facts is None or not model:
        return None
    return facts.models.find(model)


def offered_providers() -> list[ProviderFacts]:
    return [facts for facts in PROVIDERS if facts.offered()]


def every_secret_variable() -> tuple[str, ...]:
    """Every provider's secret variables, in declaration order, once each."""
    return tuple(dict.fromkeys(name for facts in PROVIDERS for name in facts.secret_variables))


def every_base_url_variable() -> tuple[str, ...]:
    """Every provider's base-URL variables, once each (their URLs' passwords
    and keys are secrets, ``AgentConfig.secrets``)."""
    return tuple(dict.fromkeys(n for facts in PROVIDERS for n in facts.base_url_variables))


def default_providers() -> list[ProviderFacts]:
    """The providers a default agent can use: offered, keyed, with a default model."""
    return [f for f in offered_providers() if f.key_variables and f.default_model]


def span_provider(name: str | None) -> str:
    """``gen_ai.provider.name`` of the provider an agent names (its default when none)."""
    name = name or DEFAULT_PROVIDER
    facts = _BY_NAME.get(name)
    return name if facts is None else facts.span_name
