"""``oma-host runs list|show|export``: what the runs recorded in a state directory did.

``list`` one line a run, ``show RUN`` a run's steps as a tree with its scores,
``export RUN`` its spans as OTLP JSON for any trace viewer; ``runs serve``
hands over to the run viewer (:mod:`.viewer_server`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime
from typing import Any, TextIO

from oma_host.core import spans as names
from oma_host.core.spans import Span
from oma_host.orchestration.run_records import NoRunDatabase, RunRecords
from oma_host.orchestration.store_schema import RunTrace, default_state_dir
from oma_host.telemetry.otlp import resource_spans

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
# The most of a tool call's input, or a task's reason, ``show`` prints on its line.
INPUT_CHARS = 200
# The most of a run's prompt (or its session's title) ``list`` prints.
PROMPT_CHARS = 60
USAGE = NO_RUN = 2
NO_DATABASE = 1


def parse_since(value: str, now: float | None = None) -> float:
    """``--since``: an ISO date or time (local time unless it names a zone),
    or an age such as ``30m``, ``2h``, ``3d`` (s, m, h, d, w); epoch seconds."""
    relative = _RELATIVE.fullmatch(value.strip())
    if relative is not None:
        amount, unit = relative.groups()
        return (time.time() if now is None else now) - float(amount) * _UNITS[unit]
    try:
        return datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"--since wants an ISO date or time (2025-06-01, 2025-06-01T14:30) or an age "
            f"(30m, 2h, 3d), got {value!r}"
        ) from None


def run_runs(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    """Carry out ``oma-host runs ACTION`` (parsed by :mod:`.runs_args`); the exit status."""
    state_dir = getattr(args, "state_dir", None) or str(default_state_dir())
    if args.runs_action == "serve":
        from oma_host.cli.viewer_server import ViewerOptions, serve_viewer

        return serve_viewer(ViewerOptions(state_dir, args.port, getattr(args, "token_file", None)))
    since = None
    if args.runs_action == "list" and args.since is not None:
        try:
            since = parse_since(args.since)
        except ValueError as error:
            print(f"oma-host runs list: {error}", file=sys.stderr)
            return USAGE
    try:
        records = RunRecords(state_dir)
    except NoRunDatabase as error:
        print(f"oma-host runs: {error}", file=sys.stderr)
        return NO_DATABASE
    with records:
        if args.runs_action == "list":
            rows = records.list_runs(
                agent=args.agent,
                since=since,
                status=args.status,
                text=args.text,
                limit=args.limit,
            )
            listed = records.runs_json(rows)
            if args.json:
                print(json.dumps(listed, indent=2), file=out)
            else:
                _print_list(rows, [run["prompt"] or run["sessionTitle"] for run in listed], out)
            return 0
        run = records.run(args.run)
        if run is None:
            print(
                f"oma-host runs: no run {args.run!r} in {records.path} "
                "(oma-host runs list shows the runs recorded)",
                file=sys.stderr,
            )
            return NO_RUN
        if args.runs_action == "export":
            print(json.dumps(resource_spans(records.spans(run)), indent=2), file=out)
            return 0
        tree = records.span_tree(run)
        evaluations = records.evaluations(run.run_id)
        if args.json:
            document = {
                "run": run.to_json(),
                "spans": [node.to_json() for node in tree],
                "evaluations": evaluations,
            }
            print(json.dumps(document, indent=2), file=out)
            return 0
        _print_run(run, out)
        for node in tree:
            for depth, span in node.walk():
                print("  " * depth + span_line(span), file=out)
        if evaluations:
            print("evaluations", file=out)
            for record in evaluations:
                reason = f"  {record['reason']}" if record["reason"] else ""
                print(f"  {record['scorer']}: {_score(record['score'])}{reason}", file=out)
        return 0


# -- formatting ------------------------------------------------------------------------


def _time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def _seconds(ms: float) -> str:
    return f"{ms:.0f} ms" if ms < 1000 else f"{ms / 1000:.1f} s"


def _cost(amount: float | None) -> str:
    return "-" if amount is None else f"${amount:.4f}"


def _score(score: float | None) -> str:
    return "-" if score is None else f"{score:g}"


def _print_list(rows: list[RunTrace], prompts: list[str | None], out: TextIO) -> None:
    if not rows:
        print("no runs", file=out)
        return
    header = ("STARTED", "AGENT", "STATUS", "TURNS", "TOKENS", "COST", "DURATION", "RUN", "PROMPT")
    lines = [header] + [
        (
            _time(row.started),
            row.agent,
            row.status,
            "-" if row.turns is None else str(row.turns),
            f"{row.input_tokens + row.output_tokens:,}",
            _cost(row.cost_usd),
            _seconds(row.duration_ms),
            row.run_id,
            "-" if prompt is None else _clipped(prompt, PROMPT_CHARS),
        )
        for row, prompt in zip(rows, prompts, strict=True)
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip(),
            file=out,
        )


def _print_run(run: RunTrace, out: TextIO) -> None:
    print(f"run {run.run_id}  agent {run.agent}  {run.method}  {run.status}", file=out)
    turns = "-" if run.turns is None else run.turns
    print(
        f"started {_time(run.started)}  duration {_seconds(run.duration_ms)}  turns {turns}  "
        f"tokens {run.input_tokens:,} in / {run.output_tokens:,} out  cost {_cost(run.cost_usd)}",
        file=out,
    )
    if run.session_id is not None:
        print(f"session {run.session_id}", file=out)
    if run.error is not None:
        kind = f" ({run.error_kind})" if run.error_kind else ""
        print(f"error{kind}: {run.error}", file=out)


def _tokens(attributes: dict[str, Any]) -> str:
    if names.INPUT_TOKENS not in attributes:
        return ""
    return f"  in {attributes[names.INPUT_TOKENS]} out {attributes.get(names.OUTPUT_TOKENS, 0)}"


def _clipped(text: str, chars: int = INPUT_CHARS) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def span_line(span: Span) -> str:
    """One span on one line: its name, status, duration, and what matters
    for its operation."""
    a = span.attributes
    parts = [span.name, span.status, _seconds(span.duration_ns / 1e6)]
    detail = ""
    if span.operation in (names.OP_INVOKE_AGENT, names.OP_CHAT, names.OP_TEAM):
        detail = _tokens(a)
        if names.COST_USD in a:
            detail += f"  {_cost(float(a[names.COST_USD]))}"  # type: ignore[arg-type]
        if names.FINISH_REASONS in a:
            detail += f"  finish {','.join(a[names.FINISH_REASONS])}"  # type: ignore[arg-type]
    elif span.operation == names.OP_EXECUTE_TOOL:
        if names.PERMISSION_DECISION in a:
            detail = f"  {a[names.PERMISSION_DECISION]} by {a.get(names.PERMISSION_BY)}"
        stored = span.local.get(names.LOCAL_TOOL_INPUT)
        if stored is not None:
            detail += f"  input {_clipped(json.dumps(stored, ensure_ascii=False))}"
    elif span.operation == names.OP_COMPACTION:
        if names.COMPACTION_STRATEGY in a:
            detail = (
                f"  {a[names.COMPACTION_STRATEGY]}: messages {a[names.COMPACTION_MESSAGES_BEFORE]}"
                f" -> {a[names.COMPACTION_MESSAGES_AFTER]}, tokens "
                f"{a[names.COMPACTION_TOKENS_BEFORE]} -> {a[names.COMPACTION_TOKENS_AFTER]}"
            )
    elif span.operation == names.OP_TASK:
        detail = f"  {a.get(names.TASK_ASSIGNEE)}: {a.get(names.TASK_STATUS, '')}"
        reason = span.local.get(names.LOCAL_TASK_REASON)
        if reason:
            detail += f" ({_clipped(str(reason))})"
    if names.ERROR_TYPE in a:
        detail += f"  error {a[names.ERROR_TYPE]}"
    return "  ".join(parts) + detail
