"""The method registry: every JSON-RPC method of the host, declared once.

Dispatch, the ``initialize`` answer, ``oma-host schema`` and the generated
reference in docs/protocol.md read it. It has two halves so that answering
``initialize`` loads nothing heavy: the index here (each :class:`Method` and
the module implementing it, no pydantic, no core), and the handlers marked with
:func:`handles`, loaded on first use, whose params and result types come from
their signatures. A test holds the halves equal. The names of what the host
sends the client are enums here too.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Protocol, Self, TypeVar

from oma_host.core.errors import ErrorCode


class Method(StrEnum):
    """A request the client may send."""

    INITIALIZE = "initialize"
    SHUTDOWN = "shutdown"
    AGENT_CREATE = "agent/create"
    AGENT_RUN = "agent/run"
    AGENT_STREAM = "agent/stream"
    AGENT_PROMPT = "agent/prompt"
    AGENT_HISTORY = "agent/history"
    AGENT_STATE = "agent/state"
    AGENT_CONFIGURE = "agent/configure"
    AGENT_RESET = "agent/reset"
    AGENT_COMPACT = "agent/compact"
    AGENT_REWIND = "agent/rewind"
    AGENT_DISPOSE = "agent/dispose"
    AGENT_LIST = "agent/list"
    RUN_AGENT = "oma/runAgent"
    RUN_TASKS = "oma/runTasks"
    RUN_TEAM = "oma/runTeam"
    EVALUATION_STATS = "oma/evaluation/stats"
    EVALUATION_FLUSH = "oma/evaluation/flush"
    EVALUATION_RECORDS = "oma/evaluation/records"
    MODELS_LIST = "models/list"


class ClientMethod(StrEnum):
    """A request the host sends the client (hooks, permission, scoring)."""

    BEFORE_RUN = "agent/beforeRun"
    AFTER_RUN = "agent/afterRun"
    REQUEST_PERMISSION = "agent/requestPermission"
    EVALUATION_SCORE = "oma/evaluation/score"
    APPLY_EDIT = "workspace/applyEdit"  # LSP's own; only to a client that declared it


class Notification(StrEnum):
    """A notification the host sends the client."""

    PROGRESS = "$/progress"
    OMA_PROGRESS = "oma/progress"


_LIFECYCLE = "oma_host.server.lifecycle"
_AGENTS = "oma_host.server.agent_methods"
_ORCHESTRATION = "oma_host.server.orchestration_methods"
_MODELS = "oma_host.server.model_methods"

# Which module implements each method; imported on the method's first use.
IMPLEMENTED_IN: Mapping[Method, str] = MappingProxyType(
    {
        Method.INITIALIZE: _LIFECYCLE,
        Method.SHUTDOWN: _LIFECYCLE,
        Method.AGENT_CREATE: _AGENTS,
        Method.AGENT_RUN: _AGENTS,
        Method.AGENT_STREAM: _AGENTS,
        Method.AGENT_PROMPT: _AGENTS,
        Method.AGENT_HISTORY: _AGENTS,
        Method.AGENT_STATE: _AGENTS,
        Method.AGENT_CONFIGURE: _AGENTS,
        Method.AGENT_RESET: _AGENTS,
        Method.AGENT_COMPACT: _AGENTS,
        Method.AGENT_REWIND: _AGENTS,
        Method.AGENT_DISPOSE: _AGENTS,
        Method.AGENT_LIST: _AGENTS,
        Method.RUN_AGENT: _AGENTS,
        Method.RUN_TASKS: _ORCHESTRATION,
        Method.RUN_TEAM: _ORCHESTRATION,
        Method.EVALUATION_STATS: _ORCHESTRATION,
        Method.EVALUATION_FLUSH: _ORCHESTRATION,
        Method.EVALUATION_RECORDS: _ORCHESTRATION,
        Method.MODELS_LIST: _MODELS,
    }
)

# The modules behind the methods, for warming up after ``initialize``.
HANDLER_MODULES: tuple[str, ...] = tuple(dict.fromkeys(IMPLEMENTED_IN.values()))


_BY_NAME: Mapping[str, Method] = MappingProxyType({method.value: method for method in Method})


def lookup(name: str) -> Method | None:
    """The method called ``name``, or None for a method the host does not have
    (a dict, not ``Method(name)``: this is on every request's path)."""
    return _BY_NAME.get(name)


class WireParams(Protocol):
    """A params type: it reads itself off the wire and names the model the
    schema documents. ``from_wire`` raises InvalidParamsError naming the field."""

    @classmethod
    def from_wire(cls, params: Any, method: str) -> Self: ...

    @classmethod
    def wire_model(cls) -> type[Any]: ...


# ``async def handler(ctx: RequestContext, params: P) -> R``; the context is
# not named here, as ``server/context.py`` sits above the registry.
Handler = Callable[[Any, Any], Awaitable[Any]]
H = TypeVar("H", bound=Handler)


@dataclass(frozen=True)
class MethodSpec:
    """One method, as its handler declares it."""

    method: Method
    handler: Handler
    # None for a method without params (shutdown); else a WireParams type.
    params: type[WireParams] | None
    result: Any  # the result type, for the schema and docs/protocol.md
    # Error answers of its own besides those its params and result imply
    # (docs/protocol.md lists both).
    raises: tuple[ErrorCode, ...] = ()

    @property
    def summary(self) -> str:
        """The first paragraph of the handler's docstring: what the method does."""
        return " ".join((inspect.getdoc(self.handler) or "").split("\n\n", 1)[0].split())

    @property
    def wire_params(self) -> type[Any] | None:
        """What the schema documents as the params (None: no params)."""
        return None if self.params is None else self.params.wire_model()

    def parse(self, params: Any) -> Any:
        if self.params is None:
            return None  # LSP methods without params (shutdown) ignore what is sent
        return self.params.from_wire(params, self.method)


_DECLARED: dict[Method, tuple[Handler, tuple[ErrorCode, ...]]] = {}
_SPECS: dict[Method, MethodSpec] = {}


def handles(method: Method, *, raises: tuple[ErrorCode, ...] = ()) -> Callable[[H], H]:
    """Declare ``handler`` as the implementation of ``method``; ``raises``: see
    :attr:`MethodSpec.raises`."""

    def declare(handler: H) -> H:
        if method in _DECLARED:
            raise RuntimeError(f"{method} is declared twice")
        _DECLARED[method] = (handler, raises)
        return handler

    return declare


def load(method: Method) -> MethodSpec:
    """The spec of ``method``, importing its module on first use."""
    spec = _SPECS.get(method)
    if spec is None:
        importlib.import_module(IMPLEMENTED_IN[method])
        declaration = _DECLARED.get(method)
        if declaration is None:
            raise LookupError(f"{IMPLEMENTED_IN[method]} declares no handler for {method}")
        spec = _SPECS[method] = _describe(method, *declaration)
    return spec


def load_all() -> list[MethodSpec]:
    """Every method's spec, in declaration order (imports every handler module)."""
    return [load(method) for method in Method]


def declared() -> dict[Method, str]:
    """Each method declared so far, with the module its handler lives in."""
    return {method: handler.__module__ for method, (handler, _) in _DECLARED.items()}


def _describe(method: Method, handler: Handler, raises: tuple[ErrorCode, ...]) -> MethodSpec:
    hints = typing.get_type_hints(handler)
    names = list(inspect.signature(handler).parameters)
    if len(names) != 2:
        raise TypeError(f"the handler of {method} must take (ctx, params)")
    params = hints[names[1]]
    if params is not type(None) and not callable(getattr(params, "from_wire", None)):
        raise TypeError(f"the params type of {method} has no from_wire")
    return MethodSpec(
        method=method,
        handler=handler,
        params=None if params is type(None) else params,
        result=hints["return"],
        raises=raises,
    )
