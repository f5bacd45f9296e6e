"""``oma-host call METHOD [JSON|-]``: one request by hand, for debugging.

It spawns a host (or connects to one with ``--connect HOST:PORT``),
initializes it, optionally creates an agent first (``--agent CONFIG``, whose
``agentId`` is put into the params), sends the request, prints progress and
other notifications live on stderr, and prints the result (or the error) as
pretty JSON on stdout, so ``| jq`` works. The exit code is 0 for a result, 1
for an error response, 2 for a usage problem, 130 after Ctrl-C (which first
cancels the request and prints what it returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from oma_host.cli.client import HostClient, RpcError, host_argv, unwrap

EXIT_ERROR_RESPONSE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


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


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


async def _call(
    method: str,
    params: Any,
    *,
    agent: Any,
    init: Any,
    connect: str | None,
    host_command: Sequence[str] | None,
    timeout: float,
) -> int:
    if connect:
        client = await HostClient.connect(*_parse_connect(connect))
    else:
        client = await HostClient.spawn(list(host_command) if host_command else host_argv())
    client.on_notification = lambda n: print(_describe(n), file=sys.stderr, flush=True)
    # Hooks and scorers are answered "no change"; permission requests are refused.
    for name in ("agent/beforeRun", "agent/afterRun"):
        client.handlers[name] = lambda params: None
    client.handlers["agent/requestPermission"] = lambda params: {"approve": False}
    try:
        await client.initialize(init)
        if agent is not None:
            created = await client.request("agent/create", {"config": agent})
            params = {**(params or {}), "agentId": created["agentId"]}
            print(f"created agent {created['agentId']}", file=sys.stderr)
        if method == "agent/stream" and isinstance(params, dict):
            params.setdefault("partialResultToken", "call")
        msg_id, pending = client.start_request(method, params)
        loop = asyncio.get_running_loop()
        interrupted = False

        def interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            print("cancelling…", file=sys.stderr, flush=True)
            client.cancel(msg_id)

        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, interrupt)
        response = await asyncio.wait_for(pending, timeout)
        with contextlib.suppress(NotImplementedError):
            loop.remove_signal_handler(signal.SIGINT)
        try:
            _print_json(unwrap(response))
            code = 0
        except RpcError:
            _print_json(response["error"])
            code = EXIT_ERROR_RESPONSE
        return EXIT_INTERRUPTED if interrupted else code
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
    except (ConnectionError, OSError) as error:
        print(f"oma-host call: {error}", file=sys.stderr)
        return EXIT_ERROR_RESPONSE
