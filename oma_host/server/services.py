"""Per-session services the methods share, built on first use: the store
(SQLite in the state directory) and the online evaluator.

Neither is touched by ``initialize``: a host that only runs agents opens its
database on the first run, and one without ``initializationOptions.evaluation``
never builds an evaluator.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from pygls.exceptions import JsonRpcException

from oma_host.core.abort import AbortSignal
from oma_host.core.config import AgentConfig, ModelDefaults, parse_agent_config
from oma_host.core.errors import InvalidParamsError, StoreError
from oma_host.core.redact import config_secrets
from oma_host.orchestration.evaluation import EvaluationConfig, OnlineEvaluator
from oma_host.orchestration.store import Store, default_state_dir
from oma_host.server.app import HostSession

log = logging.getLogger("oma_host.server")

_FLUSH_ON_SHUTDOWN_S = 2.0
_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score"],
}


def model_defaults(session: HostSession) -> ModelDefaults | None:
    """``initializationOptions.defaults`` as a model, parsed once per session."""
    if "model_defaults" not in session.extras:
        raw = session.extras.get("defaults")
        try:
            parsed = None if raw is None else ModelDefaults.model_validate(raw)
        except ValueError as error:
            raise InvalidParamsError(f"initializationOptions.defaults: {error}") from None
        session.extras["model_defaults"] = parsed
    defaults: ModelDefaults | None = session.extras["model_defaults"]
    return defaults


def work_done(session: HostSession, token: int | str | None, value: dict[str, Any]) -> None:
    """LSP work-done progress (``begin`` titled with the agent, ``end`` with
    the status) for a run that was given a ``workDoneToken``."""
    if token is not None:
        session.protocol.notify("$/progress", {"token": token, "value": value})


R = TypeVar("R", bound=Mapping[str, Any])


def _status_code(result: Mapping[str, Any], abort: AbortSignal) -> str:
    status = result.get("status")
    if isinstance(status, Mapping):
        return str(status["code"])
    if abort.aborted:  # a team result: cancelled when its request was
        return "cancelled"
    return "ok" if result["success"] else "error"


async def tracked_run(
    session: HostSession,
    method: str,
    title: str,
    work_done_token: int | str | None,
    run: Callable[[AbortSignal], Awaitable[R]],
    session_id: str | None = None,
) -> R:
    """Run with the request's abort signal, work-done progress (``end`` sent
    even when the run raises) and a trace; a cancelled run becomes error
    -32800 carrying the partial result."""
    abort = session.abort_signal() or AbortSignal()
    started = time.time()
    code = "error"
    work_done(session, work_done_token, {"kind": "begin", "title": title})
    try:
        result = await run(abort)
        code = _status_code(result, abort)
        record_trace(session, method, title, result, started, session_id, code)
    finally:
        work_done(session, work_done_token, {"kind": "end", "message": code})
    if abort.aborted and code == "cancelled":
        raise JsonRpcException(
            code=-32800,
            message="the request was cancelled",
            data={"type": "RequestCancelled", "partial": result},
        )
    return result


def note_secrets(session: HostSession, config: AgentConfig) -> None:
    """Tell the --trace file about an agent's secret values."""
    if session.tracer is not None:
        session.tracer.add_secrets(config_secrets(config))


def store_for(session: HostSession) -> Store:
    store: Store | None = session.extras.get("store")
    if store is None:
        state_dir = session.extras.get("state_dir")
        try:
            store = Store(state_dir)
        except (OSError, sqlite3.Error) as error:
            where = state_dir or default_state_dir()
            raise StoreError(f"the state directory {where} cannot be used: {error}") from None
        session.extras["store"] = store

        async def close() -> None:
            store.close()

        session.closers.append(close)
    return store


def record_trace(
    session: HostSession,
    method: str,
    agent: str,
    result: Mapping[str, Any],
    started: float,
    session_id: str | None,
    status: str,
) -> None:
    """Write a run trace in the background: traces never delay a response.
    ``result`` is an AgentRunResult or a team result."""
    finished = time.time()
    trace = {
        "run_id": result["identity"]["runId"],
        "agent": agent,
        "method": method,
        "status": status,
        "input_tokens": result["tokenUsage"]["input_tokens"],
        "output_tokens": result["tokenUsage"]["output_tokens"],
        "started": started,
        "finished": finished,
        "duration_ms": round((finished - started) * 1000, 3),
        "session_id": session_id,
    }

    async def write() -> None:
        try:
            await asyncio.to_thread(store_for(session).record_run, trace)
        except Exception as error:
            log.warning("could not record the trace of %s: %s", trace["run_id"], error)

    task = asyncio.ensure_future(write())
    session.background.add(task)
    task.add_done_callback(session.background.discard)


def evaluator_for(session: HostSession, defaults: ModelDefaults | None) -> OnlineEvaluator | None:
    """The session's evaluator, or None when evaluation is not configured."""
    config: EvaluationConfig | None = session.extras.get("evaluation")
    if config is None:
        return None
    evaluator: OnlineEvaluator | None = session.extras.get("evaluator")
    if evaluator is not None:
        return evaluator
    protocol = session.protocol

    async def client_score(params: dict[str, Any]) -> Any:
        return await protocol.send_request_async("oma/evaluation/score", params)

    async def judge(raw_config: dict[str, Any], prompt: str) -> Any:
        from oma_host.core.agent import Agent

        config = parse_agent_config(raw_config, defaults, "evaluation.scorers[].config")
        judge_agent = Agent(config.model_copy(update={"output_schema": _JUDGE_SCHEMA}))
        try:
            result = await judge_agent.run(prompt)
        finally:
            await judge_agent.close()
        if not result["success"]:
            raise RuntimeError(result["status"].get("message", "the judge failed"))
        return result.get("structured")

    # Opened here, on the event loop: the records are written from a worker
    # thread, which must not race another thread to open the store.
    store = store_for(session)
    evaluator = OnlineEvaluator(
        config,
        store_records=store.add_records,
        client_score=client_score,
        judge_run=judge,
    )
    session.extras["evaluator"] = evaluator

    async def settle() -> None:
        await evaluator.flush(_FLUSH_ON_SHUTDOWN_S)
        await evaluator.close()

    # Settle before the store closes (closers run in order).
    session.closers.insert(0, settle)
    return evaluator
