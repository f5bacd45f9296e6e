"""Benchmark: how fast an ACP agent starts, ``oma-host acp`` against the
agents users compare it with, and how much memory each holds once started.

``python3 bench/acp_start.py [--rounds N] [--quick] [--out FILE]``

``oma-host acp`` is run as a registry install runs it (``uvx``): uv's
console script in an environment of its own, this checkout installed there
by uv (``bench/.venv-acp/``, made on the first run, the checkout rebuilt and
reinstalled on each). The peers are the npm packages in
``bench/peers/`` (``npm ci`` there on the first run): Codex's ACP agent
(``@zed-industries/codex-acp``, a native binary, run directly as an
editor's registry install runs it) and Claude's
(``@zed-industries/claude-agent-acp``, on Node). A sample is the wall time
from spawning the agent to holding its answer to ``initialize``, written as
soon as it is spawned; the agent is then ended (its process group) outside
the clock. Variants are interleaved round by round (``bench.harness``), the
fastest peer's median the baseline. Target: ``oma-host acp`` at or below 1.0x.

After the rounds, each agent is started once more and left idle for a
second after its ``initialize``: its resident memory then (VmRSS of the
agent and every process it started) is printed beside the table.

Two informative variants: the **python floor**, the least any Python agent
does (``python -I -S`` reading the request and writing a fixed answer), which
shows how much of ``oma-host acp``'s time is the interpreter's own start;
and **the checkout**, ``python -m oma_host acp`` from this interpreter, as a
developer runs it (an editable install and whatever this machine's ``site``
loads).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``bench`` and ``oma_host`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import AsyncSample, Comparison, interleave_async, run_standalone

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
PEERS = BENCH_DIR / "peers"
VENV = BENCH_DIR / ".venv-acp"
DEFAULT_OUT = BENCH_DIR / "results" / "acp_start.json"
OMA = "oma-host acp"
CODEX = "codex-acp"
CLAUDE = "claude-agent-acp"
FLOOR = "python floor (informative)"
CHECKOUT = "the checkout, python -m oma_host acp (informative)"
# The least any Python ACP agent does: an isolated interpreter without site
# that reads the request and writes a fixed answer.
_FLOOR_SCRIPT = (
    "import sys\n"
    "sys.stdin.readline()\n"
    'sys.stdout.write(\'{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}\\n\')\n'
    "sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
)
TARGET = 1.0
TIMEOUT_S = 30.0
IDLE_S = 1.0
INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}},
        }
    ).encode()
    + b"\n"
)


def _ensure_peers() -> None:
    if (PEERS / "node_modules" / "@zed-industries" / "codex-acp-linux-x64").exists():
        return
    subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=PEERS,
        check=True,
        timeout=600,
    )


def _install_oma() -> Path:
    """``oma-host`` installed from this checkout by uv (what the registry's
    ``uvx`` runs: uv's console script, in an environment of its own); its
    console script."""
    uv = shutil.which("uv")
    if uv is None:
        raise RuntimeError("bench/acp_start.py needs uv (in the dev extra: pip install uv)")
    python = VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(VENV)], check=True)
    install = [uv, "pip", "install", "--quiet", "--python", str(python)]
    # This checkout's code as it is now, rebuilt on every run.
    subprocess.run(
        [*install, "--reinstall-package", "oma-host", str(ROOT)], check=True, timeout=900
    )
    return VENV / "bin" / "oma-host"


def argvs(agents_file: Path, oma_host: Path) -> dict[str, list[str]]:
    modules = PEERS / "node_modules" / "@zed-industries"
    return {
        OMA: [str(oma_host), "acp", "--agents", str(agents_file)],
        CODEX: [str(modules / "codex-acp-linux-x64" / "bin" / "codex-acp")],
        CLAUDE: ["node", str(modules / "claude-agent-acp" / "dist" / "index.js")],
        FLOOR: [sys.executable, "-I", "-S", "-c", _FLOOR_SCRIPT],
        CHECKOUT: [sys.executable, "-m", "oma_host", "acp", "--agents", str(agents_file)],
    }


async def _start(argv: list[str], env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its group is ended with it
        limit=1 << 20,
    )


async def _initialized(process: asyncio.subprocess.Process) -> None:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INITIALIZE)
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), TIMEOUT_S)
        if not line:
            raise RuntimeError("the agent closed its output before answering initialize")
        message = json.loads(line)
        if message.get("id") == 1:
            if "result" not in message:
                raise RuntimeError(f"initialize failed: {message}")
            return


async def _end(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _sampler(argv: list[str], env: dict[str, str]) -> AsyncSample:
    async def sample() -> float:
        started = time.perf_counter()
        process = await _start(argv, env)
        try:
            await _initialized(process)
            return time.perf_counter() - started
        finally:
            await _end(process)

    return sample


def _tree_rss_kb(pid: int) -> int:
    """VmRSS of ``pid`` and of every process in its group (what it started)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getpgid(int(entry)) != pid:
                continue
            with open(f"/proc/{entry}/status", encoding="utf-8") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, ProcessLookupError):
            continue
    return total


async def _idle_memory_mb(argv: list[str], env: dict[str, str]) -> float:
    process = await _start(argv, env)
    try:
        await _initialized(process)
        await asyncio.sleep(IDLE_S)
        return _tree_rss_kb(process.pid) / 1024
    finally:
        await _end(process)


async def run_acp_start(rounds: int) -> Comparison:
    _ensure_peers()
    oma_host = _install_oma()
    with tempfile.TemporaryDirectory(prefix="oma-acp-start-") as scratch:
        agents_file = Path(scratch) / "agents.json"
        agents_file.write_text(json.dumps([{"name": "claude", "model": "claude-sonnet-4-5"}]))
        # No key of anyone's: initialize needs none, and no agent may call out.
        env = {"PATH": os.environ["PATH"], "HOME": scratch, "XDG_STATE_HOME": scratch}
        commands = argvs(agents_file, oma_host)
        envs = {name: env for name in commands}
        envs[CHECKOUT] = {**env, "PYTHONPATH": str(ROOT)}  # this checkout's code
        samplers = {name: _sampler(argv, envs[name]) for name, argv in commands.items()}
        samples = await interleave_async(samplers, rounds)
        memory = {name: await _idle_memory_mb(argv, envs[name]) for name, argv in commands.items()}
    fastest = min((CODEX, CLAUDE), key=lambda name: sorted(samples[name])[len(samples[name]) // 2])
    comparison = Comparison(
        key="acp_start",
        title="ACP agent start: spawn -> initialize answered",
        baseline=fastest,
        subject=OMA,
        samples=samples,
        target=TARGET,
    )
    comparison.notes.append(
        "idle memory after initialize (VmRSS of the agent and its processes): "
        + ", ".join(f"{name} {mb:.1f} MB" for name, mb in memory.items())
    )
    return comparison


def main(argv: list[str] | None = None) -> int:
    return run_standalone("bench/acp_start.py", __doc__, DEFAULT_OUT, run_acp_start, argv)


if __name__ == "__main__":
    sys.exit(main())
