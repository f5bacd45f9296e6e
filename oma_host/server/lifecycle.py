"""``initialize`` and ``shutdown`` (docs/protocol.md, "Lifecycle").

Editors spawn the host for every window, so answering a plain ``initialize``
imports neither pydantic nor the agent core; the handler modules are warmed up
in a thread after the answer is out.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Self

from typing_extensions import TypedDict

from oma_host.core.errors import ErrorCode
from oma_host.core.version import __version__
from oma_host.providers import available_providers
from oma_host.providers.http_settings import configure_http
from oma_host.server.context import RequestContext
from oma_host.server.registry import HANDLER_MODULES, Method, handles
from oma_host.server.rpc import RpcError
from oma_host.server.state import Settings

if TYPE_CHECKING:
    from pydantic import BaseModel

    from oma_host.server.models import InitializationOptions

BACKENDS = ["process", "acp"]
_WARM_UP_DELAY_S = 0.05


@dataclass(frozen=True)
class InitializeParams:
    """initialize's params as the handler sees them: the checked
    ``initializationOptions``, or None when there are none, and the client's
    LSP ``capabilities`` as sent (only ``workspace.applyEdit`` is read)."""

    options: InitializationOptions | None = None
    capabilities: Any = None

    @classmethod
    def from_wire(cls, params: Any, method: str) -> Self:
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        if params is None or (
            isinstance(params, dict) and params.get("initializationOptions") in (None, {})
        ):
            return cls(capabilities=capabilities)  # nothing of ours to check: no pydantic needed
        from oma_host.server.models import LspInitializeParams

        options = LspInitializeParams.from_wire(params, method).initialization_options
        return cls(options, capabilities)

    @classmethod
    def wire_model(cls) -> type[BaseModel]:
        from oma_host.server.models import LspInitializeParams

        return LspInitializeParams


class AgentCapabilities(TypedDict):
    methods: list[str]
    providers: list[str]
    backends: list[str]
    structuredInput: Literal[True]


class Capabilities(TypedDict):
    agent: AgentCapabilities


class ServerInfo(TypedDict):
    name: str
    version: str


class InitializeResult(TypedDict):
    capabilities: Capabilities
    serverInfo: ServerInfo


@handles(Method.INITIALIZE)
async def initialize(ctx: RequestContext, params: InitializeParams) -> InitializeResult:
    """Settles the session's defaults, evaluation, state directory and
    telemetry; answers the capabilities."""
    if ctx.session.initialized:
        raise RpcError(ErrorCode.INVALID_REQUEST, "initialize: the server is already initialized")
    ctx.session.start(_settings(params.options))
    ctx.state.client_capabilities = params.capabilities
    ctx.state.supervisor.later(_WARM_UP_DELAY_S, "warming the handlers up", _warm_up)
    return {
        "capabilities": {
            "agent": {
                "methods": sorted(method.value for method in Method),
                "providers": available_providers(),
                "backends": BACKENDS,
                "structuredInput": True,
            }
        },
        "serverInfo": {"name": "oma-host", "version": __version__},
    }


def _settings(options: InitializationOptions | None) -> Settings:
    """The session's settings, and the host's HTTP settings; a refused
    evaluation config or HTTP settings refuse initialize (which can then be
    retried)."""
    if options is None:
        return Settings()
    evaluation = None
    if options.evaluation:
        from oma_host.orchestration.evaluation import check_judges, parse_evaluation_config

        evaluation = parse_evaluation_config(options.evaluation)
        check_judges(evaluation, options.defaults)
    if options.http is not None:
        configure_http(options.http.settings())
    telemetry = None
    if options.telemetry is not None:
        from oma_host.telemetry.settings import settle_telemetry

        asked = options.telemetry
        telemetry = settle_telemetry(
            endpoint=asked.endpoint,
            headers=asked.headers,
            service_name=asked.service_name,
            capture_content=asked.capture_content,
            explicit=True,
            export=asked.export,
        )
    return Settings(options.defaults, evaluation, options.state_dir, telemetry)


def _warm_up() -> None:
    for module in HANDLER_MODULES:
        importlib.import_module(module)


@handles(Method.SHUTDOWN)
async def shutdown(ctx: RequestContext, params: None) -> None:
    """Cancels in-flight runs, disposes every agent, flushes the stores."""
    await ctx.session.shutdown()
