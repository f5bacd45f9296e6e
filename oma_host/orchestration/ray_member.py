"""Team members on a Ray worker: the Ray task's body, and the runner process it hands them to.

Each worker keeps one warm runner (a fresh Python with oma-host imported costs
more than most members), a small host that is a child subreaper with its own
warden and runs the member with the core Agent, one JSON line in and out.
Cancelling, even by killing the worker, ends the member's process tree. No ray
import here: the host side is :mod:`.ray_executor`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from typing import IO, Any

from oma_host.core.abort import AbortSignal

RUNNER_MODULE = "oma_host.orchestration.ray_member"
# After a cancel line, how long the runner has to end its member and answer.
RUNNER_GRACE_S = 10.0
# How often the task's wait returns to Python, where KeyboardInterrupt lands.
_INTERRUPT_CHECK_S = 0.05
_STDERR_KEPT = 4000  # bytes of the runner's stderr an error message keeps
# An answer's key that is no AgentRunResult field: the member could not be
# run (the message says why).
EXECUTOR_ERROR = "executorError"
_CANCEL = b'{"cancel": true}\n'


# -- the Ray task (in a Ray worker) -------------------------------------------------


def run_member_task(payload: str) -> str:
    """The Ray task: run the member in this worker's runner; its result as
    JSON (or ``{"executorError": message}``). Cancelled (KeyboardInterrupt),
    it has the runner end the member, and returns the ``cancelled`` result."""
    try:
        runner = _Runner.for_this_worker()
        runner.send(payload.encode() + b"\n")
        return runner.answer()
    except KeyboardInterrupt:  # ray.cancel: end the member, answer as cancelled
        return runner.cancel()
    except OSError as error:  # the runner could not start, or died before its payload
        return _error(f"the member's runner failed on the worker: {error}")


class _Runner:
    """This worker's runner process, its answers read by a thread into a queue."""

    _current: _Runner | None = None

    @classmethod
    def for_this_worker(cls) -> _Runner:
        runner = cls._current
        if runner is None or runner.process.poll() is not None:
            runner = cls._current = cls()
        return runner

    def __init__(self) -> None:
        # The runner imports the same oma_host as this worker (whose sys.path
        # may have what its environment does not).
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.environ.get("PYTHONPATH")
        env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", RUNNER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert self.process.stdout is not None and self.process.stderr is not None
        self._answers: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: collections.deque[bytes] = collections.deque(maxlen=64)
        _thread(_read_lines, self.process.stdout, self._answers)
        _thread(_read_tail, self.process.stderr, self._stderr)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line)
        self.process.stdin.flush()

    def answer(self, timeout: float | None = None) -> str:
        """The runner's next answer (``queue.Empty`` after ``timeout``); an
        error answer if the runner ended instead."""
        waited = 0.0
        while True:
            try:
                line = self._answers.get(timeout=_INTERRUPT_CHECK_S)
                break
            except queue.Empty:
                waited += _INTERRUPT_CHECK_S
                if timeout is not None and waited >= timeout:
                    raise
        if line is not None:
            return line.decode()
        code = self.process.wait()
        stderr = b"".join(self._stderr).decode(errors="replace").strip()[-_STDERR_KEPT:]
        how = f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"
        return _error(f"the member's runner {how}" + (f": {stderr}" if stderr else ""))

    def cancel(self) -> str:
        """Have the runner end the member; its ``cancelled`` answer, else
        kill the runner and its group and end the task as cancelled."""
        with contextlib.suppress(OSError):
            self.send(_CANCEL)
            with contextlib.suppress(queue.Empty):
                return self.answer(RUNNER_GRACE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        raise KeyboardInterrupt


def _thread(target: Any, *args: Any) -> None:
    threading.Thread(target=target, args=args, daemon=True).start()


def _read_lines(stream: IO[bytes], into: queue.Queue[bytes | None]) -> None:
    for line in stream:
        into.put(line)
    into.put(None)  # the runner has closed its stdout: it has ended


def _read_tail(stream: IO[bytes], into: collections.deque[bytes]) -> None:
    while chunk := os.read(stream.fileno(), 4096):
        into.append(chunk)


def _error(message: str) -> str:
    return json.dumps({EXECUTOR_ERROR: message})


# -- the runner process ------------------------------------------------------------


def main() -> int:
    """The runner: answer each payload line with its member's result, until
    the end of stdin."""
    from oma_host.process.subreaper import enable_subreaper

    enable_subreaper()  # before anything starts: what a member leaves comes back here
    # Answers go out on the original stdout; anything else printed goes to stderr.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    asyncio.run(_serve(answers))
    return 0


async def _serve(answers: IO[str]) -> None:
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()

    def read_stdin() -> None:  # a thread: stdin may be anything, and reads block
        for line in sys.stdin.buffer:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=read_stdin, daemon=True).start()
    current: AbortSignal | None = None
    running: asyncio.Task[None] | None = None

    def stop() -> None:
        lines.put_nowait(None)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop)

    async def run(payload: dict[str, Any], abort: AbortSignal) -> None:
        result = await _run(payload, abort)
        answers.write(json.dumps(result) + "\n")
        answers.flush()

    while (line := await lines.get()) is not None:
        message = json.loads(line)
        if "cancel" in message:
            if current is not None:
                current.abort()
            continue
        if running is not None:
            await running  # one member at a time: the worker sends the next after the answer
        current = AbortSignal()
        running = asyncio.ensure_future(run(message, current))
    # The worker is gone (or told us to stop): end the member, then exit.
    if current is not None:
        current.abort()
    if running is not None:
        with contextlib.suppress(Exception):
            await running


async def _run(payload: dict[str, Any], abort: AbortSignal) -> Any:
    from oma_host.core.agent import Agent
    from oma_host.core.config import AgentConfig

    try:
        agent = Agent(AgentConfig.model_validate_json(payload["config"]))
    except Exception as error:  # a config this oma-host refuses (another version's)
        return {EXECUTOR_ERROR: f"the worker's oma-host refused the member's config: {error}"}
    try:
        return await agent.run(payload["prompt"], run_id=payload["runId"], abort=abort)
    finally:
        await agent.close()


if __name__ == "__main__":
    sys.exit(main())
