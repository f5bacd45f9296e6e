"""``oma-host call METHOD [JSON|-]``: one request by hand, for debugging.

It spawns a host (or connects to one with ``--connect``), sends the request,
shows notifications live on stderr and prints the answer as JSON on stdout, so
``| jq`` works. The exit code says how it went: 0 a result, 1 a failed run, 2
an error, 130 after Ctrl-C. The host runs in its own process group, so a
terminal's Ctrl-C reaches only ``call``, which cancels the request and prints
the partial result.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from oma_host.cli.client import HostClient, RpcError, host_argv, unwrap
from oma_host.core.cli_options import INTERRUPTED
from oma_host.core.errors import ErrorCode
from oma_host.server.tcp_token import TokenFileError

EXIT_FAILED_RUN = 1
EXIT_ERROR_RESPONSE = 2
EXIT_USAGE = 2
# The runs whose work-done reports are shown as a status line on a terminal.
REPORTING_METHODS = frozenset({"agent/run", "agent/prompt", "oma/runAgent"})
WORK_DONE_TOKEN = "call-work"


class UsageError(Exception):
    pass


def _json_argument(text: str | None, what: str) -> Any:
    if text is None:
        return None
    if text == "-":
        text = sys.stdin.read()
    try:
        return json.loads(text)
    except ValueError as error:
        raise UsageError(f"{what} is not valid JSON: {error}") from None


def _parse_connect(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if host.startswith("[") and host.endswith("]"):  # [::1]:PORT
        host = host[1:-1]
    try:
        return (host or "127.0.0.1", int(port))
    except ValueError:
        raise UsageError(f"--connect wants HOST:PORT, got {value!r}") from None


def _describe(notification: dict[str, Any]) -> str:
    params = notification.get("params") or {}
    if notification.get("method") == "$/progress":
        value = params.get("value") or {}
        if value.get("type") == "text":
            return f"progress {params.get('token')}: text {value.get('data')!r}"
        return f"progress {params.get('token')}: {json.dumps(value, ensure_ascii=False)}"
    return f"{notification.get('method')}: {json.dumps(params, ensure_ascii=False)}"


class _Stderr:
    """Notifications on stderr, one line each. On a terminal, the run's
    work-done reports ("waiting for claude-sonnet-4-5 (3 s)") are one status
    line instead, redrawn in place behind a spinner and cleared at the end,
    and a stream's text deltas are written as they come, as one text, the
    way a person reads a reply (a script reading a pipe gets a line each)."""

    def __init__(self, terminal: bool) -> None:
        self.terminal = terminal
        self._frames = itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        self._status_shown = False
        self._mid_text = False  # a streamed text is written up to here, with no newline

    def notification(self, notification: dict[str, Any]) -> None:
        params = notification.get("params") or {}
        if self.terminal and notification.get("method") == "$/progress":
            value = params.get("value") or {}
            if params.get("token") == WORK_DONE_TOKEN:
                self._status(value.get("message") if value.get("kind") == "report" else None)
                return
            if value.get("type") == "text" and isinstance(value.get("data"), str):
                self._text(value["data"])
                return
        self.line(_describe(notification))

    def line(self, text: str) -> None:
        self._status(None)
        self.end_text()
        print(text, file=sys.stderr, flush=True)

    def end_text(self) -> None:
        """End a streamed text's last line, if it has no newline yet."""
        if self._mid_text:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._mid_text = False

    def _text(self, delta: str) -> None:
        self._status(None)
        sys.stderr.write(delta)
        sys.stderr.flush()
        if delta:
            self._mid_text = not delta.endswith("\n")

    def _status(self, message: str | None) -> None:
        if message is not None:
            self.end_text()  # a status line drawn over a text's last line would erase it
            sys.stderr.write(f"\r\x1b[K{next(self._frames)} {message}")
        elif self._status_shown:
            sys.stderr.write("\r\x1b[K")
        self._status_shown = message is not None
        sys.stderr.flush()


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _print_response(response: dict[str, Any]) -> int:
    """Print a response's result (a cancelled run's partial result) or its
    error; returns the exit code it stands for."""
    try:
        result = unwrap(response)
    except RpcError as error:
        partial = error.data.get("partial") if isinstance(error.data, dict) else None
        # RequestCancelled: its ``data.partial`` is the run's result so far.
        if error.code == ErrorCode.REQUEST_CANCELLED and partial is not None:
            _print_json(partial)
            return INTERRUPTED
        _print_json(response["error"])
        return EXIT_ERROR_RESPONSE
    _print_json(result)
    if isinstance(result, dict) and result.get("success") is False:
        return EXIT_FAILED_RUN
    return 0


async def _call(
    method: str,
    params: Any,
    *,
    agent: Any,
    init: Any,
    connect: str | None,
    token_file: str | None,
    host_command: Sequence[str] | None,
    timeout: float,
) -> int:
    if connect:
        client = await HostClient.connect(*_parse_connect(connect), token_file=token_file)
    else:
        client = await HostClient.spawn(
            list(host_command) if host_command else host_argv(), start_new_session=True
        )
    stderr = _Stderr(sys.stderr.isatty())
    client.on_notification = stderr.notification
    # Hooks and scorers are answered "no change"; permission requests are refused.
    for name in ("agent/beforeRun", "agent/afterRun"):
        client.handlers[name] = lambda params: None
    client.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    try:
        await client.initialize(init)
        if agent is not None:
            created = await client.request("agent/create", {"config": agent})
            params = {**(params or {}), "agentId": created["agentId"]}
            stderr.line(f"created agent {created['agentId']}")
        if method == "agent/stream" and isinstance(params, dict):
            params.setdefault("partialResultToken", "call")
        if stderr.terminal and method in REPORTING_METHODS and isinstance(params, dict):
            params.setdefault("workDoneToken", WORK_DONE_TOKEN)
        msg_id, pending = client.start_request(method, params)
        loop = asyncio.get_running_loop()
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            stderr.line("cancelling…")
            client.cancel(msg_id)

        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, interrupt)
        response = await asyncio.wait_for(pending, timeout)
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
        stderr.end_text()
        code = _print_response(response)
        return INTERRUPTED if interrupted else code
    except RpcError as error:  # initialize or agent/create refused
        _print_json({"code": error.code, "message": error.message, "data": error.data})
        return EXIT_ERROR_RESPONSE
    finally:
        await client.close()


def run_call(
    method: str,
    params_text: str | None,
    *,
    agent_text: str | None = None,
    init_text: str | None = None,
    connect: str | None = None,
    token_file: str | None = None,
    host_command: Sequence[str] | None = None,
    timeout: float = 600.0,
) -> int:
    try:
        params = _json_argument(params_text, "PARAMS")
        agent = _json_argument(agent_text, "--agent")
        init = _json_argument(init_text, "--init")
        if agent is not None and params is not None and not isinstance(params, dict):
            raise UsageError("--agent needs PARAMS to be an object (agentId is added to it)")
        return asyncio.run(
            _call(
                method,
                params,
                agent=agent,
                init=init,
                connect=connect,
                token_file=token_file,
                host_command=host_command,
                timeout=timeout,
            )
        )
    except UsageError as error:
        print(f"oma-host call: {error}", file=sys.stderr)
        return EXIT_USAGE
    except TimeoutError:
        print(f"oma-host call: no answer to {method} within {timeout:g} s", file=sys.stderr)
        return EXIT_ERROR_RESPONSE
    except (ConnectionError, OSError, TokenFileError) as error:
        print(f"oma-host call: {error}", file=sys.stderr)
        return EXIT_ERROR_RESPONSE
