"""The method table, and the lifecycle methods that need nothing heavy.

Editors spawn the host on every window, so answering ``initialize`` imports
only pygls and this module; the agent methods (and pydantic, the core, the
bridges) load on the first request that needs them, or in the background
right after ``initialize`` is answered.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from oma_host import __version__
from oma_host.core.errors import InvalidParamsError
from oma_host.providers import available_providers
from oma_host.server.app import HostSession, rpc_error

log = logging.getLogger("oma_host.server")

BACKENDS = ["process", "acp"]
_AGENT_METHODS = "oma_host.server.agent_methods"
_ORCHESTRATION_METHODS = "oma_host.server.orchestration_methods"
_WARM_UP_DELAY_S = 0.05


def _read_initialization_options(params: Any) -> dict[str, Any]:
    """Check ``initializationOptions`` by hand (pydantic is not loaded yet)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise InvalidParamsError("initialize: params must be an object")
    options = params.get("initializationOptions")
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise InvalidParamsError("initialize: params.initializationOptions must be an object")
    unknown = set(options) - {"defaults", "evaluation", "stateDir"}
    if unknown:
        raise InvalidParamsError(
            f"initialize: params.initializationOptions.{sorted(unknown)[0]}: is not a known field"
        )
    defaults = options.get("defaults")
    if defaults is not None:
        if not isinstance(defaults, dict):
            raise InvalidParamsError("initialize: initializationOptions.defaults must be an object")
        for key, value in defaults.items():
            if key not in ("model", "provider", "baseURL"):
                raise InvalidParamsError(
                    f"initialize: initializationOptions.defaults.{key}: is not a known field"
                )
            if value is not None and not isinstance(value, str):
                raise InvalidParamsError(
                    f"initialize: initializationOptions.defaults.{key} must be a string"
                )
    for key, kind, name in (("evaluation", dict, "an object"), ("stateDir", str, "a string")):
        if options.get(key) is not None and not isinstance(options[key], kind):
            raise InvalidParamsError(f"initialize: initializationOptions.{key} must be {name}")
    return options


async def initialize(session: HostSession, params: Any) -> Any:
    if session.initialized:
        raise rpc_error(-32600, "initialize: the server is already initialized", "InvalidRequest")
    options = _read_initialization_options(params)
    evaluation = None
    if options.get("evaluation"):
        # Only a host that asks for evaluation pays for its config models here.
        from oma_host.orchestration.evaluation import check_judges, parse_evaluation_config

        evaluation = parse_evaluation_config(options["evaluation"])
        check_judges(evaluation, options.get("defaults"))
    # Only an initialize that succeeded initializes: a refused one can be retried.
    session.initialized = True
    session.extras["defaults"] = options.get("defaults")
    if options.get("stateDir") is not None:
        session.extras["state_dir"] = options["stateDir"]
    if evaluation is not None:
        session.extras["evaluation"] = evaluation
    # Warm the agent methods up in a thread shortly after the answer is out, so
    # the import neither delays this answer nor, usually, the first agent call.
    loop = asyncio.get_running_loop()
    loop.call_later(
        _WARM_UP_DELAY_S,
        lambda: loop.run_in_executor(None, importlib.import_module, _AGENT_METHODS),
    )
    return {
        "capabilities": {
            "agent": {
                "methods": sorted(METHODS),
                "providers": available_providers(),
                "backends": BACKENDS,
                "structuredInput": True,
            }
        },
        "serverInfo": {"name": "oma-host", "version": __version__},
    }


async def shutdown(session: HostSession, params: Any) -> None:
    await session.shutdown()
    return None


Handler = Callable[[HostSession, Any], Awaitable[Any]]


def _lazy(name: str, module_name: str = _AGENT_METHODS) -> Handler:
    """A handler that imports its module on first use."""

    async def handler(session: HostSession, params: Any) -> Any:
        module = importlib.import_module(module_name)
        return await getattr(module, name)(session, params)

    handler.__name__ = name
    return handler


METHODS: dict[str, Handler] = {
    "initialize": initialize,
    "shutdown": shutdown,
    "agent/create": _lazy("agent_create"),
    "agent/run": _lazy("agent_run"),
    "agent/stream": _lazy("agent_stream"),
    "agent/prompt": _lazy("agent_prompt"),
    "agent/history": _lazy("agent_history"),
    "agent/state": _lazy("agent_state"),
    "agent/reset": _lazy("agent_reset"),
    "agent/dispose": _lazy("agent_dispose"),
    "agent/list": _lazy("agent_list"),
    "oma/runAgent": _lazy("run_agent"),
    "oma/runTasks": _lazy("run_tasks", _ORCHESTRATION_METHODS),
    "oma/runTeam": _lazy("run_team", _ORCHESTRATION_METHODS),
    "oma/evaluation/stats": _lazy("evaluation_stats", _ORCHESTRATION_METHODS),
    "oma/evaluation/flush": _lazy("evaluation_flush", _ORCHESTRATION_METHODS),
    "oma/evaluation/records": _lazy("evaluation_records", _ORCHESTRATION_METHODS),
}
