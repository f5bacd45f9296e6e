"""One team member run on a Ray worker: the Ray task's body, and the runner
process it starts (``python -m oma_host.orchestration.ray_member``).

The Ray task (:func:`run_member_task`, called in a Ray worker) starts a
runner process in a session of its own and hands it the task's payload on
stdin: the member's config (as JSON), the prompt (a string) and the run id.
The runner is a small host: it makes itself a child subreaper, runs the
member with the core :class:`~oma_host.core.agent.Agent` (a process or ACP
agent through its bridge, in its process group and the config's ``cwd`` on
this node; an LLM agent with ``placement: "ray"`` through the LLM backend)
and writes the run's result, as JSON, on its stdout. What the member leaves
behind comes back to the runner and is ended with it, and the runner's warden
(:mod:`oma_host.core.warden`) ends the member's processes if the runner
itself is killed.

Cancelling ends the member's process tree on the worker:

- ``ray.cancel(ref)`` raises KeyboardInterrupt in the task, which sends the
  runner SIGTERM: the runner aborts the run (the bridge ends the member's
  process group) and writes its ``cancelled`` result, which the task returns;
  a runner still there after ``RUNNER_GRACE_S`` is killed with its group.
- ``ray.cancel(ref, force=True)`` kills the worker: the runner reads the end
  of its stdin (the worker held the other end) and aborts the same way.

The runner's own stdout carries nothing but the result: anything else written
there (a library's print) goes to stderr, which the task keeps the end of for
an error message. No ray import here: the host side is
:mod:`oma_host.orchestration.ray_executor`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Any

RUNNER_MODULE = "oma_host.orchestration.ray_member"
# After SIGTERM, how long the runner has to end its member and answer.
RUNNER_GRACE_S = 10.0
_POLL_S = 0.05  # the task's wait for the runner, short: KeyboardInterrupt lands between polls
_STDERR_KEPT = 4000  # characters of the runner's stderr an error message keeps
# A payload's or a result's key that is no AgentRunResult field: the runner
# could not run the member (the message says why).
EXECUTOR_ERROR = "executorError"


# -- the Ray task (in a Ray worker) -------------------------------------------------


def run_member_task(payload: str) -> str:
    """The Ray task: run the member in a runner process; its result as JSON
    (or ``{"executorError": message}``). Cancelled (KeyboardInterrupt), it
    ends the runner and returns the runner's ``cancelled`` result."""
    runner: subprocess.Popen[bytes] | None = None
    output: _Collected | None = None
    try:
        runner = _start_runner()
        output = _Collected(runner)
        assert runner.stdin is not None
        runner.stdin.write(payload.encode() + b"\n")
        runner.stdin.flush()  # stdin stays open: its end tells the runner the worker is gone
        while True:
            try:
                runner.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                continue
    except KeyboardInterrupt:  # ray.cancel: end the member, answer as cancelled
        if runner is None:
            raise
        _end_runner(runner)
    except OSError as error:  # the runner could not start, or died before its payload
        if runner is None:
            return _error(f"the member's runner could not start on the worker: {error}")
        _end_runner(runner)
    assert runner is not None and output is not None
    return output.answer(runner.returncode)


def _start_runner() -> subprocess.Popen[bytes]:
    """The runner, importing the same oma_host as this worker (the worker's
    own sys.path may have what its environment does not)."""
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": package_root + (os.pathsep + path if path else "")}
    return subprocess.Popen(
        [sys.executable, "-m", RUNNER_MODULE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )


def _end_runner(runner: subprocess.Popen[bytes]) -> None:
    """SIGTERM the runner (it ends its member and answers), then SIGKILL its
    group if it has not ended within RUNNER_GRACE_S."""
    with contextlib.suppress(ProcessLookupError):
        runner.send_signal(signal.SIGTERM)
    try:
        runner.wait(timeout=RUNNER_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()


class _Collected:
    """The runner's stdout and stderr, read in threads while it runs (a
    result larger than a pipe's buffer must not block it)."""

    def __init__(self, runner: subprocess.Popen[bytes]) -> None:
        assert runner.stdout is not None and runner.stderr is not None
        self._stdout: list[bytes] = []
        self._stderr: list[bytes] = []
        self._readers = [
            _reader(runner.stdout, self._stdout),
            _reader(runner.stderr, self._stderr),
        ]
        self._runner = runner

    def answer(self, code: int | None) -> str:
        for reader in self._readers:
            reader.join()
        if self._runner.stdin is not None:
            with contextlib.suppress(OSError):
                self._runner.stdin.close()
        out = b"".join(self._stdout).decode(errors="replace")
        if code == 0 and out.startswith("{"):
            return out
        stderr = b"".join(self._stderr).decode(errors="replace").strip()[-_STDERR_KEPT:]
        how = f"exited with code {code}" if code is None or code >= 0 else f"got signal {-code}"
        return _error(f"the member's runner {how}" + (f": {stderr}" if stderr else ""))


def _reader(stream: IO[bytes], into: list[bytes]) -> threading.Thread:
    thread = threading.Thread(target=lambda: into.append(stream.read()), daemon=True)
    thread.start()
    return thread


def _error(message: str) -> str:
    return json.dumps({EXECUTOR_ERROR: message})


# -- the runner process ------------------------------------------------------------


def main() -> int:
    """The runner: read the payload, run the member, write its result."""
    from oma_host.core.subreaper import enable_subreaper

    enable_subreaper()  # before anything starts: what the member leaves comes back here
    # The result goes out on the original stdout; anything else printed goes to stderr.
    result_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    line = sys.stdin.buffer.readline()
    try:
        payload = json.loads(line)
    except ValueError:
        print("the runner's payload is not JSON", file=sys.stderr)
        return 2
    result = asyncio.run(_run(payload))
    result_out.write(json.dumps(result))
    result_out.close()
    return 0


async def _run(payload: dict[str, Any]) -> Any:
    from oma_host.core.abort import AbortSignal
    from oma_host.core.agent import Agent
    from oma_host.core.config import AgentConfig

    abort = AbortSignal()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, abort.abort)

    def stdin_readable() -> None:
        # Nothing more is sent: readable means the end, the worker is gone.
        if not os.read(0, 4096):
            loop.remove_reader(0)
            abort.abort()

    loop.add_reader(0, stdin_readable)
    agent = Agent(AgentConfig.model_validate_json(payload["config"]))
    try:
        return await agent.run(payload["prompt"], run_id=payload["runId"], abort=abort)
    finally:
        await agent.close()


if __name__ == "__main__":
    sys.exit(main())
