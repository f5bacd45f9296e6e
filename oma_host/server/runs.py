"""What every run method does around its run: abort, progress, trace, -32800 partial answer.

The request's abort signal, LSP work-done progress (a report per step and every
second while waiting), a trace in the store with its spans exported when
telemetry is on, and the -32800 answer carrying a cancelled run's partial
result.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from oma_host.core.abort import AbortSignal
from oma_host.core.activity import watching
from oma_host.core.config import AgentConfig
from oma_host.core.errors import ErrorCode
from oma_host.core.redact import config_secrets
from oma_host.core.spans import CollectedSpans, SpanSink, recording
from oma_host.orchestration.store_schema import run_record
from oma_host.server.context import RequestContext
from oma_host.server.rpc import RpcError
from oma_host.server.trace_batch import TraceBatch

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
    spans = CollectedSpans()
    export, capture = await ctx.state.span_export()
    sinks: tuple[SpanSink, ...] = (spans,) if export is None else (spans, export)
    try:
        with recording(*sinks, capture_content=capture, conversation_id=session_id):
            if reporter is None:
                result = await run(ctx.abort)
            else:
                with watching(reporter.report):
                    result = await run(ctx.abort)
        code = _status_code(result, ctx.abort)
        _record_trace(ctx, title, result, started, session_id, code, spans)
    finally:
        if reporter is not None:
            reporter.end(code)
    if ctx.abort.aborted and code == "cancelled":
        raise RpcError(ErrorCode.REQUEST_CANCELLED, "the request was cancelled", partial=result)
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
    spans: CollectedSpans,
) -> None:
    """Write a run trace and its spans in the background: traces never
    delay a response. ``result`` is an AgentRunResult or a team result."""
    trace, rows = run_record(
        result,
        agent=agent,
        method=str(ctx.method),
        status=status,
        started=started,
        session_id=session_id,
        spans=spans,
    )
    batch = ctx.state.run_traces
    if batch is None:
        state = ctx.state
        batch = state.run_traces = TraceBatch(state.supervisor, state.store)
    batch.add(trace, rows)
