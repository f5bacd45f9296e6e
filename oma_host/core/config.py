"""AgentConfig and its backends' configs as pydantic models (docs/protocol.md, "Data types").

Wire names are camelCase and unknown fields are rejected. ``history`` is kept
raw, for the shape guard to report with a path. A config works out its secret
values once (``secrets``), so every redaction of one agent's runs uses the same
set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, Literal, Self, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)
from pydantic.alias_generators import to_camel

from oma_host.core.credentials import stored_keys
from oma_host.core.errors import InvalidParamsError
from oma_host.core.events import PermissionAction
from oma_host.core.provider_facts import (
    DEFAULT_PROVIDER,
    every_base_url_variable,
    every_secret_variable,
    provider_facts,
)
from oma_host.core.redact import is_secret_name, redacted_url, url_secrets
from oma_host.core.suggest import did_you_mean
from oma_host.core.validation import describe_validation_error, predicate_error


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        strict=True,  # "3" is not an integer and "yes" is not a boolean
    )


class HooksConfig(_Model):
    before_run: bool = False
    after_run: bool = False
    timeout_ms: Annotated[int, Field(gt=0)] = 30_000


# What an external agent's output may hold before the run fails (``output_limit``).
DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024


class _ExternalBackend(_Model):
    """The fields every external backend has; ``kind`` is narrowed by each."""

    kind: str
    command: Annotated[str, Field(min_length=1)]
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    # Bytes of stdout a run may read before it fails (``output_limit``): all
    # of a process's output; what an ACP agent writes during one run.
    max_output_bytes: Annotated[int, Field(gt=0)] = DEFAULT_MAX_OUTPUT_BYTES

    def environment(self) -> dict[str, str]:
        """The environment the command runs with: the host's, ``env`` over it."""
        return {**os.environ, **self.env}


# How long one tool call may take before it is an error result (toolTimeoutMs).
DEFAULT_TOOL_TIMEOUT_MS = 120_000


# How a process backend's prompt reaches the command.
ProcessInput = Literal["stdin", "argument", "none"]
# What an ACP backend does with its agent's permission requests.
AcpPermissionMode = Literal["auto-approve", "reject", "ask-client"]
# OpenAI and Azure: Chat Completions or the Responses API.
OpenAIApi = Literal["chat", "responses"]


class ProcessBackend(_ExternalBackend):
    kind: Literal["process"]
    input: ProcessInput = "stdin"
    terminal: bool = False


class AcpBackend(_ExternalBackend):
    kind: Literal["acp"]
    permission: AcpPermissionMode = "auto-approve"
    # The authMethods id to log in with when session/new answers "authentication
    # required" (else the only method whose env vars are all set).
    auth: Annotated[str, Field(min_length=1)] | None = None
    # configOptions choices applied at session start: configId -> value id (or a boolean).
    config: dict[str, str | bool] = Field(default_factory=dict)
    # Serve fs/write_text_file (through the permission policy); reads are always served.
    allow_writes: bool = False


# A config's ``backend``: the external kinds the wire accepts (docs/protocol.md,
# "External backends"), told apart by ``kind``. The code that runs each kind is
# found through the registry of :mod:`oma_host.core.backends` (the ``Backend``
# protocol): a new kind adds its model here and registers its entry there.
BackendConfig = Annotated[ProcessBackend | AcpBackend, Field(discriminator="kind")]
# The tags of that union, which pydantic puts into error locations.
_BACKEND_KINDS = frozenset(
    kind
    for model in (ProcessBackend, AcpBackend)
    for kind in get_args(model.model_fields["kind"].annotation)
)


class NameValue(_Model):
    """An environment variable or an HTTP header, as ACP writes them."""

    name: Annotated[str, Field(min_length=1)]
    value: str


class McpServerStdio(_Model):
    """An MCP server the host starts as a subprocess (ACP's ``McpServerStdio``)."""

    name: Annotated[str, Field(min_length=1)]
    command: Annotated[str, Field(min_length=1)]
    args: list[str] = Field(default_factory=list)
    env: list[NameValue] = Field(default_factory=list)


class McpServerHttp(_Model):
    """An MCP server reached over streamable HTTP (ACP's ``McpServerHttp``)."""

    type: Literal["http"]
    name: Annotated[str, Field(min_length=1)]
    url: Annotated[str, Field(min_length=1)]
    headers: list[NameValue] = Field(default_factory=list)


McpServer = McpServerHttp | McpServerStdio


class PermissionRule(_Model):
    """One rule of ``permissions``: the first rule whose ``tool`` (a name or a
    glob such as ``fs__*``) and ``pattern`` (a glob on the call's main
    argument, its path or command) match decides."""

    tool: Annotated[str, Field(min_length=1)]
    pattern: str | None = None
    action: PermissionAction


# Presets over the permission rules: ``ask`` (the default: the rules, then
# reads allowed and the rest asked), ``accept-edits`` (the rules, then file
# writes allowed), ``auto`` (the rules, then file writes and commands run in
# the sandbox allowed), ``read-only`` (anything but a read refused, whatever
# the rules say; the model is told so).
PermissionMode = Literal["ask", "accept-edits", "auto", "read-only"]
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)

# The OS sandbox a ``shell`` command runs in (oma_host/workspace/sandbox.py):
# ``off``; ``workspace-write`` (it writes only in cwd, the additional
# directories and a private temp folder, with no network); ``read-only`` (it
# writes only in its private temp folder, with no network).
SandboxMode = Literal["off", "workspace-write", "read-only"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)

# ``toolPreset``: open-multi-agent's sets of built-in tools (its ``bash`` is
# the ``shell`` tool here). An agent's tools are the preset's, then those
# ``tools`` adds, less those ``disallowedTools`` names (granted_tools).
ToolPreset = Literal["readonly", "readwrite", "full"]
TOOL_PRESETS: dict[ToolPreset, tuple[str, ...]] = {
    "readonly": ("file_read", "grep", "glob"),
    "readwrite": ("file_read", "grep", "glob", "file_write", "file_edit"),
    "full": ("file_read", "grep", "glob", "file_write", "file_edit", "shell"),
}
assert tuple(TOOL_PRESETS) == get_args(ToolPreset)


class PricingConfig(_Model):
    """``pricing``: the model's prices in US dollars per million tokens; the
    cache's writes and reads cost the input price unless given."""

    input: Annotated[float, Field(ge=0)]
    output: Annotated[float, Field(ge=0)]
    cache_write: Annotated[float, Field(ge=0)] | None = None
    cache_read: Annotated[float, Field(ge=0)] | None = None


ThinkingEffort = Literal["low", "medium", "high"]


class ThinkingConfig(_Model):
    """``thinking``: the model reasons before it answers, at an ``effort`` or
    within ``budgetTokens``; each provider adapter maps it to its own form."""

    effort: ThinkingEffort | None = None
    budget_tokens: Annotated[int, Field(gt=0)] | None = None


# How an LLM agent keeps its conversation within the model's context window:
# ``summarize`` the older turns into one summary block (the default),
# ``sliding-window`` drop the oldest turns, ``off`` send it whole.
ContextStrategy = Literal["summarize", "sliding-window", "off"]


class ContextConfig(_Model):
    """``context``: when a request's estimated tokens would pass ``compactAt``
    of the window (less the room kept for the reply), the conversation is
    compacted first (``llm/context_window.py``); ``keepTurns`` turns at its end are
    kept as they are (default: as many as fit in a share of the window)."""

    strategy: ContextStrategy = "summarize"
    compact_at: Annotated[float, Field(gt=0, le=1)] = 0.85
    keep_turns: Annotated[int, Field(gt=0)] | None = None


class LoopDetectionConfig(_Model):
    """``loopDetection``: a tool call identical to the ones just before it
    (same tool, equal JSON input), made ``maxRepeats`` times in a row, is not
    run but answered with a warning; one more ends the run (``loop``)."""

    max_repeats: Annotated[int, Field(ge=2)] = 3


def _loop_detection_tag(value: Any) -> str | None:
    if isinstance(value, str):
        return "off" if value == "off" else None
    return "object" if isinstance(value, Mapping | LoopDetectionConfig) else None


# ``loopDetection``: its settings, or "off". The tags only pick the member, so
# a mistake is reported against the member the client meant, or as one line.
LoopDetection = Annotated[
    Annotated[LoopDetectionConfig, Tag("object")] | Annotated[Literal["off"], Tag("off")],
    Discriminator(
        _loop_detection_tag,
        custom_error_type="predicate",
        custom_error_message='must be "off" or an object {maxRepeats?: int >= 2}',
    ),
]
_LOOP_DETECTION_TAGS = frozenset({"object", "off"})


# How deep delegations go beneath a run a client started, and how many that
# run and everything beneath it may make in all (``delegation``).
DEFAULT_DELEGATION_DEPTH = 3
DEFAULT_MAX_DELEGATIONS = 16


class DelegationConfig(_Model):
    """``delegation``: the bounds on the tasks this agent's runs hand on
    with the ``delegate`` tool. ``maxDepth``: the levels of delegation that
    may go on beneath one of its runs (a delegate of a delegate is level 2);
    ``maxCalls``: the delegations a run a client started, and every run
    beneath it, may make in all."""

    max_depth: Annotated[int, Field(ge=1, le=10)] = DEFAULT_DELEGATION_DEPTH
    max_calls: Annotated[int, Field(ge=1, le=1000)] = DEFAULT_MAX_DELEGATIONS


class ModelDefaults(_Model):
    """``initializationOptions.defaults``: applied to configs that leave them out."""

    model: str | None = None
    provider: str | None = None
    base_url: str | None = Field(default=None, alias="baseURL")


def parse_model_defaults(value: ModelDefaults | Mapping[str, Any] | None) -> ModelDefaults | None:
    """Model defaults given as a model or as their wire mapping."""
    if value is None or isinstance(value, ModelDefaults):
        return value
    return ModelDefaults.model_validate(dict(value))


def _absolute_path(value: str) -> str:
    if not os.path.isabs(value):
        raise predicate_error(f"must be an absolute path; {value!r} is relative")
    return value


class AgentConfig(_Model):
    name: Annotated[str, Field(min_length=1)]
    model: str | None = None
    # Other models the agent may be switched to (the ACP door's ``model`` option).
    models: list[str] | None = None
    provider: str | None = None
    base_url: str | None = Field(default=None, alias="baseURL")
    # OpenAI and Azure: Chat Completions or the Responses API (default: by endpoint).
    api: OpenAIApi | None = None
    api_key_env: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    system_prompt: str | None = None
    max_turns: Annotated[int, Field(gt=0)] | None = None
    max_tokens: Annotated[int, Field(gt=0)] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_token_budget: Annotated[int, Field(gt=0)] | None = None
    # USD a run may spend (at its models' prices, core/cost.py) before it ends.
    max_cost_budget: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    # Models of the same provider tried in order, for one turn, when the model
    # fails with an overload, a rate limit or a server error after its retries.
    fallback_models: list[Annotated[str, Field(min_length=1)]] | None = None
    # None: on, with LoopDetectionConfig's default; "off": never.
    loop_detection: LoopDetection | None = None
    timeout_ms: Annotated[int, Field(gt=0)] | None = None
    # Bounds every tool call, built-in, MCP or served by the editor (ms;
    # DEFAULT_TOOL_TIMEOUT_MS when unset).
    tool_timeout_ms: Annotated[int, Field(gt=0)] | None = None
    # The built-in tools it may call: ``toolPreset``'s, plus ``tools``, less
    # ``disallowedTools`` (granted_tools); none of the three: none (the ACP
    # door gives such an LLM agent the ``full`` preset and ``update_plan``).
    tool_preset: ToolPreset | None = None
    tools: list[str] | None = None
    disallowed_tools: list[str] | None = None
    # The host's part of the system prompt before ``systemPrompt``: where the
    # agent works (cwd, OS, date, git), its tools and permission mode, and the
    # project's AGENTS.md (oma_host/llm/environment.py). None: the door's
    # default, on at the ACP door, off at the JSON-RPC door and in Python.
    environment: bool | None = None
    cwd: str | None = None
    # Folders the built-in tools reach besides ``cwd`` (absolute paths; ACP's
    # ``additionalDirectories``): each confined as ``cwd`` is, with the same
    # permission rules, and named in the environment prompt.
    additional_directories: list[Annotated[str, AfterValidator(_absolute_path)]] | None = None
    history: Any = None
    hooks: HooksConfig | None = None
    output_schema: dict[str, Any] | None = None
    backend: BackendConfig | None = None
    mcp_servers: list[McpServer] | None = None
    permissions: list[PermissionRule] | None = None
    permission_mode: PermissionMode | None = None  # None: "ask"
    # None: "off", but "workspace-write" in the "auto" permission mode.
    sandbox: SandboxMode | None = None
    # The model's context window and prices, over the provider's model table.
    context_window: Annotated[int, Field(gt=0)] | None = None
    context: ContextConfig | None = None  # None: summarize at 0.85
    pricing: PricingConfig | None = None
    thinking: ThinkingConfig | None = None
    # Cache the prompt prefix (Anthropic cache_control, Bedrock cachePoint);
    # unset: the provider's default (on for Anthropic, off for Bedrock).
    prompt_caching: bool | None = None
    # Other agents of the session this (LLM) agent may hand a task to with
    # its ``delegate`` tool, by name; ``delegation`` bounds how far that goes.
    delegates: list[Annotated[str, Field(min_length=1)]] | None = None
    delegation: DelegationConfig | None = None

    @field_validator("tool_preset", mode="before")
    @classmethod
    def _known_preset(cls, value: Any) -> Any:
        """A preset that is not one names itself and the nearest one (any
        other type is left to the type's own error)."""
        if isinstance(value, str) and value not in TOOL_PRESETS:
            known = ", ".join(f'"{name}"' for name in TOOL_PRESETS)
            raise predicate_error(
                f"must be one of {known}; {value!r} is not one{did_you_mean(value, TOOL_PRESETS)}"
            )
        return value

    def granted_tools(self) -> list[str]:
        """The built-in tools granted: ``toolPreset``'s, then those ``tools``
        adds, less those ``disallowedTools`` names, each once, in that order.
        Whether each name is a built-in tool is the LLM backend's to check."""
        preset = TOOL_PRESETS[self.tool_preset] if self.tool_preset else ()
        removed = set(self.disallowed_tools or [])
        granted = dict.fromkeys([*preset, *(self.tools or [])])
        return [name for name in granted if name not in removed]

    @cached_property
    def secrets(self) -> tuple[str, ...]:
        """The secret values a run of this agent can meet, computed once: its
        key, wherever it comes from (``apiKey``, ``apiKeyEnv``, else every
        secret variable of every provider, :mod:`.provider_facts`), those its
        provider reads from files (an AWS profile's), the password and
        key-like query parameters of its ``baseURL`` and of every provider's
        base-URL variable, and, for an external backend, every
        secret-looking variable of the environment it runs with."""
        secrets: list[str] = []
        if self.api_key:
            secrets.append(self.api_key)
        if self.backend is None:
            names = (self.api_key_env,) if self.api_key_env else every_secret_variable()
            secrets.extend(os.environ[name] for name in names if os.environ.get(name))
            secrets.extend(url_secrets(self.base_url))
            for name in every_base_url_variable():
                secrets.extend(url_secrets(os.environ.get(name)))
            secrets.extend(stored_keys())  # oma-host login's
            facts = provider_facts(self.provider or DEFAULT_PROVIDER)
            if facts is not None and facts.file_secrets is not None:
                secrets.extend(facts.file_secrets())
        else:
            environment = self.backend.environment()
            secrets.extend(value for name, value in environment.items() if is_secret_name(name))
        for server in self.mcp_servers or []:
            # Headers carry tokens whatever their name; variables by their name.
            pairs = server.headers if isinstance(server, McpServerHttp) else server.env
            secret_only = isinstance(server, McpServerStdio)
            secrets.extend(
                pair.value
                for pair in pairs
                if pair.value and (not secret_only or is_secret_name(pair.name))
            )
        return tuple(secrets)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied; its secrets are worked out afresh
        (pydantic would copy the cached ones of the original)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("secrets", None)
        return copied

    def public_view(self) -> dict[str, Any]:
        """The config as hooks and listings see it: no hooks, no history, no
        key, backend environment values hidden (they often hold tokens) and
        the secrets of ``baseURL`` taken out."""
        view = self.model_dump(
            by_alias=True, exclude_none=True, exclude={"hooks", "api_key", "history"}
        )
        if self.base_url:
            view["baseURL"] = redacted_url(self.base_url)
        backend = view.get("backend")
        if backend and backend.get("env"):
            backend["env"] = {key: "[redacted]" for key in backend["env"]}
        for server in view.get("mcpServers", []):
            for field in ("env", "headers"):
                for pair in server.get(field, []):
                    pair["value"] = "[redacted]"
        return view


def parse_agent_config(
    value: AgentConfig | Mapping[str, Any],
    defaults: ModelDefaults | None = None,
    where: str = "config",
) -> AgentConfig:
    """Validate a config (a mapping from the wire or Python), fill in the host
    defaults, and check that an LLM-backed agent has a model."""
    if isinstance(value, AgentConfig):
        config = value
    else:
        if not isinstance(value, Mapping):
            raise InvalidParamsError(f"{where} must be an object")
        try:
            config = AgentConfig.model_validate(dict(value))
        except ValidationError as error:
            raise InvalidParamsError(
                describe_validation_error(
                    error, where, _BACKEND_KINDS | _LOOP_DETECTION_TAGS, AgentConfig
                )
            ) from None
    if config.backend is None and defaults is not None:
        fill = {
            key: getattr(defaults, key)
            for key in ("model", "provider", "base_url")
            if getattr(config, key) is None and getattr(defaults, key) is not None
        }
        if fill:
            config = config.model_copy(update=fill)
    if config.backend is None and not config.model:
        raise InvalidParamsError(
            f"{where}.model is required for an agent without a backend "
            "(set it in the config or in initializationOptions.defaults.model)"
        )
    _check_delegates(config, where)
    return config


def _check_delegates(config: AgentConfig, where: str) -> None:
    """What a config's ``delegates`` can be refused for on its own: a
    backend (only an LLM agent has tools), its own name, a name twice.
    Whether each name is an agent is the door's to say (the session's agents,
    the agents file)."""
    names = config.delegates or []
    if names and config.backend is not None:
        raise InvalidParamsError(
            f"{where}.delegates: only an LLM agent (one without a backend) can delegate; "
            f"agent {config.name!r} has a {config.backend.kind} backend"
        )
    for index, name in enumerate(names):
        if name == config.name:
            raise InvalidParamsError(
                f"{where}.delegates[{index}]: agent {name!r} cannot delegate to itself"
            )
        if name in names[:index]:
            raise InvalidParamsError(f"{where}.delegates[{index}]: {name!r} is listed twice")
