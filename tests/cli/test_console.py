"""``oma-host console`` driven in a real pseudo-terminal, the way a person uses
it: type commands, watch replies stream, cancel with Ctrl-C, read errors, quit."""

from __future__ import annotations

import asyncio
import base64
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from oma_host.cli.client import host_argv
from tests.server.helpers import kill_quietly, wait_dead

PROMPT = "oma> "
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def _spawn(state_dir: Path) -> pexpect.spawn:
    argv = host_argv("console")
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(state_dir),
        "INPUTRC": os.devnull,  # no personal key bindings
        "TERM": "dumb",
    }
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=20)
    child.expect_exact("type help for commands")
    child.expect_exact(PROMPT)
    return child


@pytest.fixture
def console(tmp_path: Path) -> Iterator[pexpect.spawn]:
    child = _spawn(tmp_path / "state")
    yield child
    if child.isalive():
        child.close(force=True)


def _quit(child: pexpect.spawn, how: str = "quit") -> int:
    if how == "quit":
        child.sendline("quit")
    else:
        # Only once readline is reading: a ^D typed while the terminal is still in
        # canonical mode becomes an end-of-file marker readline never sees as ^D.
        child.expect_exact(PROMPT)
        child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


def test_create_and_stream_then_cancel_a_slow_run_with_ctrl_c(
    console: pexpect.spawn, tmp_path: Path
) -> None:
    console.sendline('create up {"backend":{"kind":"process","command":"tr","args":["a-z","A-Z"]}}')
    console.expect_exact("created up (agent-1)")
    console.sendline("stream up hello from the console")
    console.expect_exact("HELLO FROM THE CONSOLE")
    console.expect(r"\[up: ok, [0-9.]+s, 0/0 tokens\]")
    # A slow run: prints a line, then sleeps; Ctrl-C cancels it, not the console.
    pidfile = tmp_path / "pid"
    script = f"echo $$ > {pidfile}; echo streaming-now; sleep 30"
    console.sendline(
        'create slow {"backend":{"kind":"process","command":"sh","args":["-c","'
        + script
        + '"],"input":"none"}}'
    )
    console.expect_exact("created slow (agent-2)")
    console.sendline("stream slow go")
    console.expect_exact("streaming-now")
    pid = int(pidfile.read_text())
    try:
        console.sendintr()
        console.expect(r"cancelling stream slow \(#\d+\)")
        console.expect(r"\[slow: cancelled after [0-9.]+s\]")
        assert wait_dead(pid)
    finally:
        kill_quietly(pid)
    # Ctrl-C at an idle prompt just gives a fresh prompt; the console still works.
    console.sendintr()
    console.expect_exact(PROMPT)
    console.sendline("agents")
    console.expect(r"up\s+agent-1\s+up\s+\(process\)")
    console.expect(r"slow\s+agent-2\s+slow\s+\(process\)")
    assert _quit(console) == 0


def test_a_run_that_does_not_stream_shows_its_steps_above_the_prompt(
    console: pexpect.spawn,
) -> None:
    console.sendline(
        'create slow {"backend":{"kind":"process","command":"sleep","args":["30"],"input":"none"}}'
    )
    console.expect_exact("created slow (agent-1)")
    console.sendline("run slow go")
    # The host re-sends the step every second: the status line counts.
    console.expect(r"\S slow: running \([1-9]\d* s\)\r\n" + re.escape(PROMPT))
    console.sendline("cancel")
    console.expect(r"\[slow: cancelled after [0-9.]+s\]")
    assert _quit(console) == 0


def test_errors_are_one_readable_line_with_the_json_path(console: pexpect.spawn) -> None:
    console.sendline('create cat {"backend":{"kind":"process","command":"cat"}}')
    console.expect_exact("created cat (agent-1)")
    image = '{"type":"image","source":{"type":"base64","media_type":"image/png","data":5}}'
    console.sendline(
        f'run cat [{{"role":"user","content":[{{"type":"text","text":"hi"}},{image}]}}]'
    )
    console.expect_exact(
        "error -32602 InvalidMessageError at input[0].content[1].source.data: must be a string"
    )
    console.sendline('run cat [{"role":"user","content":[{"type":"text","text":"hi"}]}]')
    console.expect(
        r"error -32602 InvalidMessageError at input: agent 'cat' has a process backend, "
        r"which accepts string prompts only"
    )
    console.sendline('create turns {"provider":"test","model":"echo"}')
    console.expect_exact("created turns (agent-2)")
    console.sendline('prompt turns [{"role":"user","content":[{"type":"text","text":"hi"}]}]')
    console.expect_exact("error -32602 InvalidMessageError at input[0].type: must be a string")
    console.expect_exact("prompt takes TEXT or content blocks")
    console.expect_exact("a list of messages goes to run or stream")
    console.sendline('run turns [{"type":"text","text":"hi"}]')
    console.expect_exact("error -32602 InvalidMessageError at input[0].role")
    console.expect_exact("run takes TEXT or a list of messages")
    console.expect_exact("content blocks alone go to prompt")
    console.sendline("history nobody")
    console.expect(r"error -32001 AgentNotFound: [^\r\n]*nobody")
    # Raw JSON-RPC: sent as is, the answer printed; garbage gets the host's -32700.
    console.sendline(
        '{"jsonrpc":"2.0","id":"raw-1","method":"agent/run","params":{"agentId":"agent-1","input":[]}}'
    )
    console.expect(r'\{"jsonrpc": "2.0", "id": "raw-1", "error": \{"code": -32602')
    console.sendline("{this is not json")
    console.expect(r'"id": null, "error": \{"code": -32700')
    console.sendline("fly away")
    console.expect_exact("error: unknown command 'fly'; type help")
    console.sendline("image cat nothere.png what is this")
    console.expect_exact("error: cannot read nothere.png: No such file or directory\r\n")
    assert _quit(console) == 0


def test_image_prompt_history_and_ctrl_d(console: pexpect.spawn, tmp_path: Path) -> None:
    png = tmp_path / "pixel.png"
    png.write_bytes(PNG)
    console.sendline('create eye {"provider":"test","model":"echo"}')
    console.expect_exact("created eye (agent-1)")
    console.sendline(f"image eye {png} what is in this picture")
    # The test model answers with what it received: the text block and the image block.
    console.expect_exact('"media_type": "image/png", "data": "' + base64.b64encode(PNG).decode())
    console.expect(r"\[eye: ok, ")
    console.sendline("history eye")
    console.expect(r"user: what is in this picture \[image image/png, \d+ base64 chars\]")
    console.expect("assistant: ")
    console.sendline("reset eye")
    console.expect_exact("reset eye")
    console.sendline("history eye")
    console.expect_exact("(eye has no history)")
    assert _quit(console, how="eof") == 0
    # Line history was saved where XDG says state belongs.
    history = (tmp_path / "state" / "oma-host" / "console_history").read_text()
    assert "history eye" in history and f"image eye {png}" in history


def test_a_key_typed_into_a_create_line_is_not_written_to_the_history_file(
    console: pexpect.spawn, tmp_path: Path
) -> None:
    key = "sk-ant-api03-typed-into-the-console-0123456789"
    console.sendline(f'create keyed {{"provider":"test","model":"echo","apiKey":"{key}"}}')
    console.expect_exact("created keyed (agent-1)")
    console.sendline("run keyed hello")
    console.expect(r"\[keyed: ok, ")
    assert _quit(console) == 0
    history = (tmp_path / "state" / "oma-host" / "console_history").read_text()
    assert key not in history
    assert '"apiKey":"[redacted]"' in history and "run keyed hello" in history


def test_an_unwritable_state_dir_does_not_stop_the_console(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    child = _spawn(blocked / "state")  # cannot be created: its parent is a file
    try:
        child.sendline("agents")
        child.expect_exact("(no agents)")
        assert _quit(child) == 0
    finally:
        if child.isalive():
            child.close(force=True)


async def test_piped_commands_run_one_after_another(tmp_path: Path) -> None:
    # Without a terminal there is no prompt, and each command finishes first.
    argv = host_argv("console")
    script = (
        'create up {"backend":{"kind":"process","command":"tr","args":["a-z","A-Z"]}}\n'
        "stream up piped\nrun up again\nagents\n"
    )
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path)},
    )
    out, _ = await asyncio.wait_for(process.communicate(script.encode()), 30)
    lines = out.decode().splitlines()
    assert lines[0] == "created up (agent-1)"
    assert lines[1] == "PIPED" and re.fullmatch(r"\[up: ok, .*\]", lines[2])
    assert lines[3] == "AGAIN" and re.fullmatch(r"\[up: ok, .*\]", lines[4])
    assert re.fullmatch(r"up\s+agent-1\s+up\s+\(process\)", lines[5])
    assert process.returncode == 0
