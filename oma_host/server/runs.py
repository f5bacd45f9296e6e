"""What every run method does around its run: the request's abort signal,
LSP work-done progress (``begin``, a ``report`` for each step the run takes
and every second while it waits, ``end``), a trace in the store, and the
-32800 answer that carries a cancelled run's partial result."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from oma_host.core.abort import AbortSignal
from oma_host.core.activity import watching
from oma_host.core.config import AgentConfig
from oma_host.core.redact import config_secrets
from oma_host.server.context import RequestContext
from oma_host.server.rpc import REQUEST_CANCELLED, RpcError

if TYPE_CHECKING:
    from oma_host.server.state import SessionState

log = logging.getLogger("oma_host.server")

R = TypeVar("R", bound=Mapping[str, Any])

# How often a run's latest step is re-sent while it waits.
REPORT_INTERVAL_S = 1.0


def note_secrets(ctx: RequestContext, config: AgentConfig) -> None:
    """Tell the --trace file about an agent's secret values."""
    if ctx.state.tracer is not None:
        ctx.state.tracer.add_secrets(config_secrets(config))


def _status_code(result: Mapping[str, Any], abort: AbortSignal) -> str:
    status = result.get("status")
    if isinstance(status, Mapping):
        return str(status["code"])
    if abort.aborted:  # a team result: cancelled when its request was
        return "cancelled"
    return "ok" if result["success"] else "error"


async def tracked_run(
    ctx: RequestContext,
    title: str,
    work_done_token: int | str | None,
    run: Callable[[AbortSignal], Awaitable[R]],
    session_id: str | None = None,
) -> R:
    """Run with the request's abort signal, work-done progress (``begin``
    titled ``title``, a ``report`` per step, ``end`` with the status, sent
    even when the run raises) and a trace; a cancelled run becomes error
    -32800 carrying the partial result."""
    started = time.time()
    code = "error"
    reporter = None if work_done_token is None else _Reporter(ctx, work_done_token, title)
    try:
        with watching(reporter.report) if reporter else contextlib.nullcontext():
            result = await run(ctx.abort)
        code = _status_code(result, ctx.abort)
        _record_trace(ctx, title, result, started, session_id, code)
    finally:
        if reporter is not None:
            reporter.end(code)
    if ctx.abort.aborted and code == "cancelled":
        raise RpcError(
            REQUEST_CANCELLED, "the request was cancelled", "RequestCancelled", partial=result
        )
    return result


class _Reporter:
    """One run's work-done progress: ``begin`` titled with the agent, then
    ``report`` messages (the run's latest step with the time since it
    started, sent at each step and re-sent every second so a client sees a
    long wait still counting), then ``end`` with the status."""

    def __init__(self, ctx: RequestContext, token: int | str, title: str) -> None:
        self._ctx = ctx
        self._token = token
        self._started = time.monotonic()
        self._message = "running"
        ctx.progress(token, {"kind": "begin", "title": title})
        self._ticker = asyncio.ensure_future(self._tick())

    def report(self, message: str) -> None:
        self._message = message
        self._send()

    def end(self, code: str) -> None:
        self._ticker.cancel()
        self._ctx.progress(self._token, {"kind": "end", "message": code})

    def _send(self) -> None:
        elapsed = int(time.monotonic() - self._started)
        self._ctx.progress(
            self._token, {"kind": "report", "message": f"{self._message} ({elapsed} s)"}
        )

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(REPORT_INTERVAL_S)
            self._send()


def _record_trace(
    ctx: RequestContext,
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
        "method": str(ctx.method),
        "status": status,
        "input_tokens": result["tokenUsage"]["input_tokens"],
        "output_tokens": result["tokenUsage"]["output_tokens"],
        "started": started,
        "finished": finished,
        "duration_ms": round((finished - started) * 1000, 3),
        "session_id": session_id,
    }
    _TraceBatch.of(ctx.state).add(trace)


class _TraceBatch:
    """The traces waiting to be written for one host session. The first trace
    starts a writer; traces that finish while it writes join the next batch,
    so a burst of runs costs a few transactions (each an fsync) and thread
    hand-offs rather than one per run."""

    _batches: weakref.WeakKeyDictionary[SessionState, _TraceBatch] = weakref.WeakKeyDictionary()

    def __init__(self, state: SessionState) -> None:
        self._state = state
        self._waiting: list[dict[str, Any]] = []
        self._writing = False

    @classmethod
    def of(cls, state: SessionState) -> _TraceBatch:
        batch = cls._batches.get(state)
        if batch is None:
            batch = cls._batches[state] = cls(state)
        return batch

    def add(self, trace: dict[str, Any]) -> None:
        self._waiting.append(trace)
        if not self._writing:
            self._writing = True
            self._state.supervisor.spawn("the run traces", self._write())

    async def _write(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                try:
                    await asyncio.to_thread(self._state.store().record_runs, batch)
                except Exception as error:
                    runs = ", ".join(trace["run_id"] for trace in batch)
                    log.warning("could not record the traces of %s: %s", runs, error)
        finally:
            self._writing = False
