"""Benchmark 1: startup, from spawning the server process to holding its
``initialize`` response, for oma-host against a bare pygls server.

Both servers are driven by the same few lines of client code below (spawn,
write the ``initialize`` frame, read frames until its response), so the
difference is the servers' own. Teardown (``shutdown``, ``exit``, or a kill
when a server lingers) happens after the clock stops.

Optionally, ``python -X importtime`` shows where oma-host's startup time goes:
the top-level imports on the real startup path (spawn, ``initialize``, exit),
with their cumulative import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import AsyncSample, Comparison, interleave_async

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
OMA_HOST = "oma-host"
BARE = "bare pygls"
ARGV: dict[str, list[str]] = {
    OMA_HOST: [sys.executable, "-m", "oma_host"],
    BARE: [sys.executable, str(BENCH_DIR / "bare_pygls_server.py")],
}
TARGET_RATIO = 1.25
RESPONSE_TIMEOUT_S = 30.0
TEARDOWN_TIMEOUT_S = 5.0


# -- the shared client --------------------------------------------------------


def frame(message: dict[str, Any]) -> bytes:
    """One LSP base-protocol frame."""
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def read_message(stdout: asyncio.StreamReader) -> dict[str, Any]:
    """Read one framed JSON message (any headers; Content-Length required)."""
    head = await stdout.readuntil(b"\r\n\r\n")
    length = None
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    if length is None:
        raise ValueError(f"a frame without Content-Length: {head!r}")
    message: dict[str, Any] = json.loads(await stdout.readexactly(length))
    return message


async def read_response(stdout: asyncio.StreamReader, msg_id: int) -> dict[str, Any]:
    """Skip notifications and server requests until the response to ``msg_id``."""
    while True:
        message = await read_message(stdout)
        if message.get("id") == msg_id and "method" not in message:
            return message


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": os.getpid(), "rootUri": None, "capabilities": {}},
}


@dataclass
class StartupSample:
    """One spawn: seconds to the ``initialize`` response, and the whole stderr."""

    seconds: float
    stderr: bytes
    returncode: int | None


async def spawn_and_initialize(argv: list[str], env: dict[str, str] | None = None) -> StartupSample:
    """Spawn ``argv`` (with ``env`` over this process's environment), time it
    to the ``initialize`` response, then tear it down."""
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
        env=None if env is None else {**os.environ, **env},
    )
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    # Drained all along: a server that fills the stderr pipe would stall.
    stderr_task = asyncio.ensure_future(process.stderr.read())
    try:
        process.stdin.write(frame(INITIALIZE))
        response = await asyncio.wait_for(read_response(process.stdout, 1), RESPONSE_TIMEOUT_S)
        elapsed = time.perf_counter() - start
        if "result" not in response:
            raise RuntimeError(f"{argv}: initialize failed: {response}")
        await _teardown(process)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        stderr = await stderr_task
        print(stderr.decode(errors="replace")[-2000:], file=sys.stderr)
        raise
    return StartupSample(elapsed, await stderr_task, process.returncode)


async def _teardown(process: asyncio.subprocess.Process) -> None:
    """``shutdown`` + ``exit``; kill whatever is still running after that."""
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        await asyncio.wait_for(read_response(process.stdout, 2), TEARDOWN_TIMEOUT_S)
        process.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        process.stdin.close()
        await asyncio.wait_for(process.wait(), TEARDOWN_TIMEOUT_S)
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


# -- the benchmark ------------------------------------------------------------


async def run_startup(rounds: int, warmup: int = 1) -> Comparison:
    """Spawn → ``initialize`` response for oma-host and the bare server, interleaved."""

    def variant(name: str) -> AsyncSample:
        async def sample() -> float:
            return (await spawn_and_initialize(ARGV[name])).seconds

        return sample

    samples = await interleave_async(
        {BARE: variant(BARE), OMA_HOST: variant(OMA_HOST)}, rounds, warmup
    )
    return Comparison(
        key="startup",
        title="startup: spawn -> initialize response",
        baseline=BARE,
        subject=OMA_HOST,
        samples=samples,
        target=TARGET_RATIO,
        notes=[
            f"oma-host: {' '.join(ARGV[OMA_HOST][1:])}; "
            f"bare: {Path(ARGV[BARE][1]).relative_to(REPO_ROOT)}",
        ],
    )


# -- where the time goes (python -X importtime) -----------------------------

SHOWN_CHILD_MS = 5.0  # direct imports shown under a top-level one from this cost up
_IMPORTTIME = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S.*)$")


@dataclass
class ImportNode:
    """One import and the imports it triggered directly, with cumulative ms."""

    name: str
    cumulative_ms: float
    children: list[ImportNode] = field(default_factory=list)

    def to_json(self, depth: int = 1) -> dict[str, Any]:
        entry: dict[str, Any] = {"module": self.name, "cumulative_ms": self.cumulative_ms}
        if depth > 0 and self.children:
            entry["children"] = [child.to_json(depth - 1) for child in self.children]
        return entry


@dataclass
class ImportTime:
    """Top-level imports of one server's startup path, by cumulative time."""

    server: str
    total_ms: float
    modules: int
    top: list[ImportNode]

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "total_ms": self.total_ms,
            "modules": self.modules,
            "top_level": [node.to_json() for node in self.top],
        }


def parse_importtime(server: str, stderr: str, top: int = 8) -> ImportTime:
    """Build the import tree from ``-X importtime`` output and rank its top level.

    CPython prints a module after everything it imported, indented two spaces
    per level, so the children of a line are the lines one level deeper that
    came since the last line at its own level or above.
    """
    pending: dict[int, list[ImportNode]] = {}
    modules = 0
    for line in stderr.splitlines():
        match = _IMPORTTIME.match(line)
        if match is None:
            continue
        modules += 1
        level = (len(match.group(3)) - 1) // 2
        children = sorted(
            pending.pop(level + 1, []), key=lambda node: node.cumulative_ms, reverse=True
        )
        node = ImportNode(match.group(4), int(match.group(2)) / 1000.0, children)
        pending.setdefault(level, []).append(node)
    top_level = sorted(pending.get(0, []), key=lambda node: node.cumulative_ms, reverse=True)
    total = sum(node.cumulative_ms for node in top_level)
    return ImportTime(server, total, modules, top_level[:top])


async def run_importtime() -> list[ImportTime]:
    """One spawn of each server under ``-X importtime`` (startup path only)."""
    reports = []
    for name in (OMA_HOST, BARE):
        argv = ARGV[name]
        sample = await spawn_and_initialize([argv[0], "-X", "importtime", *argv[1:]])
        reports.append(parse_importtime(name, sample.stderr.decode(errors="replace")))
    return reports


def format_importtime(reports: list[ImportTime]) -> str:
    """The import-time block of the table."""
    lines = ["imports on the startup path (python -X importtime, one spawn each, indicative)"]
    for report in reports:
        lines.append(
            f"  {report.server}: {report.total_ms:.1f} ms over {report.modules} modules;"
            " top-level cumulative:"
        )
        for node in report.top:
            lines.append(f"    {node.cumulative_ms:8.1f} ms  {node.name}")
            lines.extend(
                f"    {child.cumulative_ms:8.1f} ms    {child.name}"
                for child in node.children[:4]
                if child.cumulative_ms >= SHOWN_CHILD_MS
            )
    return "\n".join(lines)
