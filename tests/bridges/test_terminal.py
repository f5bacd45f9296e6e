"""Terminal mode for process agents (``backend.terminal: true``): the command
runs under a pseudo-terminal, so it line-buffers and sees a TTY; the prompt is
typed and ended with end-of-file; output arrives cleaned of escape sequences,
with CRLF as LF; everything else behaves as in pipe mode."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from tests.builders import text_message
from tests.server.helpers import (
    PY,
    create,
    expect_error,
    kill_quietly,
    process_config,
    wait_dead,
    wait_for_file,
    wait_for_progress,
)

# Without -u, and with PYTHONUNBUFFERED cleared (set in some environments), so
# Python buffers stdout as it does for a user: by blocks on a pipe, by lines on a TTY.
_BUFFERED = {"PYTHONUNBUFFERED": ""}
_FIRST_SLEEP_SECOND = "import time; print('first'); time.sleep(2); print('second')"


def _python(name: str, program: str, **backend: Any) -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "process", "command": PY, "args": ["-c", program], **backend},
    }


async def _texts(host: HostClient, agent: str, token: str, text: str = "go") -> list[str]:
    params = {"agentId": agent, "input": text, "partialResultToken": token}
    result = await host.request("agent/stream", params)
    assert result["success"] is True, result
    texts = [event["data"] for event in host.progress(token) if event["type"] == "text"]
    assert "".join(texts) == result["output"]
    return texts


@pytest.mark.parametrize("terminal", [False, True])
async def test_python_output_is_block_buffered_on_a_pipe_and_line_buffered_on_a_terminal(
    host: HostClient, terminal: bool
) -> None:
    agent = await create(
        host, **_python("p", _FIRST_SLEEP_SECOND, env=_BUFFERED, terminal=terminal)
    )
    texts = await _texts(host, agent, f"buffering-{terminal}")
    if terminal:
        assert texts == ["first\n", "second\n"]
    else:
        # The pipe mode's limitation that terminal mode exists for: one block at exit.
        assert texts == ["first\nsecond\n"]


async def test_with_a_terminal_the_first_line_reaches_the_client_before_the_process_exits(
    host: HostClient, tmp_path: Path
) -> None:
    # The program prints 'second' only after the client has seen 'first' (it
    # waits for a file the test writes on that event), so this passes only if
    # the first text event is streamed while the process is still running.
    gate = tmp_path / "seen-first"
    program = (
        "import os, time\nprint('first')\n"
        f"while not os.path.exists({str(gate)!r}):\n    time.sleep(0.02)\nprint('second')\n"
    )
    agent = await create(
        host, **_python("gated", program, env=_BUFFERED, terminal=True), timeoutMs=30000
    )
    order: list[str] = []

    def on_notification(message: dict[str, Any]) -> None:
        value = message["params"]["value"]
        order.append(value["data"])
        if value["data"] == "first\n":
            gate.write_text("yes")

    host.on_notification = on_notification
    result = await host.request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "g"}
    )
    order.append("<response>")
    assert result["status"]["code"] == "ok", result
    assert order == ["first\n", "second\n", "<response>"]


async def test_the_prompt_is_typed_with_end_of_file_and_arrives_exactly(host: HostClient) -> None:
    agent = await create(
        host,
        name="cat",
        systemPrompt="ROLE",
        backend={"kind": "process", "command": "cat", "terminal": True},
    )
    # A line far longer than a canonical terminal line (4095 bytes), and control
    # characters the line discipline would otherwise act on (^C, ^D, ^U, DEL, ^Z).
    text = "question\n" + "x" * 10_000 + "\x03\x04\x15\x7f\x1a tail"
    result = await host.request("agent/run", {"agentId": agent, "input": text})
    assert result["success"] is True
    assert result["output"] == f"ROLE\n\n{text}"  # no echo, no ^D, no CRLF
    probe = (
        "import sys; print(sys.stdin.isatty(), sys.stdout.isatty(), sys.stderr.isatty());"
        "print(repr(sys.stdin.read()))"
    )
    tty = await create(host, **_python("tty", probe, terminal=True))
    result = await host.request("agent/run", {"agentId": tty, "input": "hi"})
    assert result["output"] == "True True True\n'hi'\n"


async def test_argument_and_none_inputs_see_end_of_file_on_stdin(host: HostClient) -> None:
    none = await create(host, **process_config("n", "cat; echo done", input="none", terminal=True))
    result = await host.request("agent/run", {"agentId": none, "input": "ignored"})
    assert result["output"] == "done\n"
    argv = "import json, sys; print(json.dumps(sys.argv[1:])); print(repr(sys.stdin.read()))"
    argument = await create(host, **_python("a", argv, input="argument", terminal=True))
    result = await host.request("agent/run", {"agentId": argument, "input": "q; rm -rf /"})
    assert result["output"] == "[\"q; rm -rf /\"]\n''\n"


async def test_escape_sequences_are_removed_and_crlf_normalised_across_reads(
    host: HostClient,
) -> None:
    # Pauses split a colour sequence and a CR/LF pair between reads; the window
    # title (OSC) and the program's own CRLF must not survive either.
    script = (
        r"printf '\033[3'; sleep 0.2; printf '1mred\033[0m plain\r'; sleep 0.2; "
        r"printf '\n\033]0;title\007\033[2Kdone\r\n'; echo to-stderr >&2"
    )
    agent = await create(host, **process_config("ansi", script, input="none", terminal=True))
    texts = await _texts(host, agent, "ansi")
    assert "".join(texts) == "red plain\ndone\nto-stderr\n"
    assert all("\x1b" not in text and "\r" not in text for text in texts)


async def test_exit_status_failures_and_the_string_only_boundary_as_in_pipe_mode(
    host: HostClient,
) -> None:
    failing = await create(
        host,
        name="f",
        backend={
            "kind": "process",
            "command": "sh",
            "args": ["-c", 'echo "bad thing: $MY_API_TOKEN"; exit 3'],
            "env": {"MY_API_TOKEN": "hunter2-very-secret"},
            "terminal": True,
        },
    )
    result = await host.request("agent/run", {"agentId": failing, "input": "x"})
    assert result["success"] is False and result["status"]["code"] == "error"
    assert result["errorInfo"]["kind"] == "process"
    # The merged terminal output is the failure's detail, secrets redacted.
    assert result["output"].startswith("sh exited with code 3: bad thing: [redacted]")
    assert "hunter2-very-secret" not in json.dumps(result)
    killed = await create(host, **process_config("k", "kill -9 $$", terminal=True))
    result = await host.request("agent/run", {"agentId": killed, "input": "x"})
    assert result["output"] == "sh was killed by SIGKILL"
    missing = await create(
        host, name="m", backend={"kind": "process", "command": "/no/such/tool", "terminal": True}
    )
    result = await host.request("agent/run", {"agentId": missing, "input": "x"})
    assert result["errorInfo"]["kind"] == "spawn" and "/no/such/tool" in result["output"]
    cat = await create(
        host, name="c", backend={"kind": "process", "command": "cat", "terminal": True}
    )
    result = await host.request("agent/run", {"agentId": cat, "input": "   "})
    assert result["success"] is False and result["errorInfo"]["kind"] == "input"
    error = await expect_error(
        host.request("agent/run", {"agentId": cat, "input": [text_message("hi")]}),
        -32602,
        "InvalidMessageError",
    )
    assert "accepts string prompts only" in error.message


async def test_cancel_kills_the_process_group_and_returns_partial_output(
    host: HostClient, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 60 & echo $$ $! > {pids}; echo partial line; wait"
    agent = await create(host, **process_config("tree", script, input="none", terminal=True))
    msg_id, pending = host.start_request(
        "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "c"}
    )
    child, grandchild = (int(pid) for pid in (await wait_for_file(pids)).split())
    try:
        await wait_for_progress(host, "c")
        host.cancel(msg_id)
        response = await asyncio.wait_for(pending, 15)
        assert response["error"]["code"] == -32800
        partial = response["error"]["data"]["partial"]
        assert partial["aborted"] is True and partial["output"] == "partial line\n"
        assert wait_dead(child) and wait_dead(grandchild)
    finally:
        kill_quietly(child)
        kill_quietly(grandchild)


async def test_timeout_fails_the_run_and_kills_the_process(
    host: HostClient, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    agent = await create(
        host,
        **process_config(
            "late", f"echo $$ > {pidfile}; echo started; sleep 60", input="none", terminal=True
        ),
        timeoutMs=2000,  # "started" must arrive first, even on a loaded machine
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["status"]["code"] == "timeout" and result["output"] == "started\n"
    assert wait_dead(int(pidfile.read_text()))
