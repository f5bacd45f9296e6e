"""Newline-delimited JSON on stdio: chosen from the first bytes (or forced with
``--framing``), one message per line each way, same methods and errors as LSP."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pexpect

from oma_host.cli.client import host_argv
from tests.server.helpers import TcpHost, wait_dead

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"processId": None, "capabilities": {}},
}


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


class Typist:
    """A person at a terminal: types a line, reads the JSON lines the host prints
    (skipping the terminal's echo of what was typed and stderr log lines)."""

    def __init__(self) -> None:
        argv = host_argv()
        self.child = pexpect.spawn(argv[0], argv[1:], encoding="utf-8", timeout=20)
        self.typed: set[str] = set()

    def type(self, text: str) -> None:
        self.typed.add(text)
        self.child.sendline(text)

    def next_message(self) -> dict[str, Any]:
        while True:
            line = self.child.readline().strip()
            if not line:
                assert not self.child.eof(), "the host closed its output"
                continue
            if line in self.typed or not line.startswith("{"):
                continue  # the echo of a typed line, or a log line on the shared terminal
            message: dict[str, Any] = json.loads(line)
            return message


def test_a_person_types_json_lines_at_the_host() -> None:
    person = Typist()
    try:
        person.type(_line(INIT))
        answer = person.next_message()
        assert (
            answer["id"] == 1
            and "agent/stream" in answer["result"]["capabilities"]["agent"]["methods"]
        )
        person.type("this is not json")
        error = person.next_message()
        assert error["id"] is None and error["error"]["code"] == -32700
        assert error["error"]["data"]["type"] == "ParseError"
        # The next line is read normally, and a blank line is ignored (no error for it).
        person.type("")
        config = {
            "name": "shout",
            "backend": {"kind": "process", "command": "tr", "args": ["a-z", "A-Z"]},
        }
        person.type(
            _line(
                {"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": {"config": config}}
            )
        )
        assert person.next_message() == {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {"agentId": "agent-1"},
        }
        stream = {"agentId": "agent-1", "input": "two\nlines", "partialResultToken": "p"}
        person.type(_line({"jsonrpc": "2.0", "id": 3, "method": "agent/stream", "params": stream}))
        progress = person.next_message()
        assert progress["method"] == "$/progress"
        assert progress["params"] == {"token": "p", "value": {"type": "text", "data": "TWO\nLINES"}}
        result = person.next_message()
        assert result["id"] == 3 and result["result"]["output"] == "TWO\nLINES"
        person.type(_line({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}))
        assert person.next_message() == {"jsonrpc": "2.0", "id": 4, "result": None}
        person.type(_line({"jsonrpc": "2.0", "method": "exit"}))
        person.child.expect(pexpect.EOF)
        person.child.close()
        assert person.child.exitstatus == 0
    finally:
        if person.child.isalive():
            person.child.close(force=True)


class Pipe:
    """The host on plain pipes, for exact bytes: one line out per message."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def spawn(cls, *flags: str) -> Pipe:
        process = await asyncio.create_subprocess_exec(
            *host_argv(*flags),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=2**24,
        )
        return cls(process)

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    async def read_line(self) -> bytes:
        assert self.process.stdout is not None
        return await asyncio.wait_for(self.process.stdout.readline(), 20)

    async def answer(self, data: bytes) -> dict[str, Any]:
        self.send(data)
        line = await self.read_line()
        assert line.endswith(b"\n") and b"\n" not in line[:-1]
        message: dict[str, Any] = json.loads(line)
        return message

    async def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return await asyncio.wait_for(self.process.wait(), 20)


async def test_long_and_oversized_lines_and_crlf() -> None:
    host = await Pipe.spawn("--framing", "ndjson", "--max-message-bytes", "600000")
    # Leading blank lines and a CRLF ending are fine; the lifecycle gate applies as in LSP.
    early = await host.answer(b'\n\n{"jsonrpc":"2.0","id":9,"method":"agent/list"}\r\n')
    assert early["error"]["code"] == -32002 and early["id"] == 9
    assert (await host.answer(_line(INIT).encode() + b"\r\n"))["id"] == 1
    create = {"config": {"name": "cat", "backend": {"kind": "process", "command": "cat"}}}
    created = await host.answer(
        _line({"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": create}).encode()
        + b"\n"
    )
    # A 200 KB line (well past the reader's 64 KiB buffer) with newlines inside its strings.
    text = ("line of text\n" * 16000)[:200_000]
    run = {"agentId": created["result"]["agentId"], "input": text}
    result = await host.answer(
        _line({"jsonrpc": "2.0", "id": 3, "method": "agent/run", "params": run}).encode() + b"\n"
    )
    assert result["id"] == 3 and result["result"]["output"] == text
    # Over the limit: discarded, answered -32600 with its id, and the next line still works.
    big = {"jsonrpc": "2.0", "id": 77, "method": "agent/list", "params": {"pad": "x" * 700_000}}
    error = await host.answer(_line(big).encode() + b"\n")
    assert error["id"] == 77 and error["error"]["code"] == -32600
    assert "600000" in error["error"]["message"]
    listed = await host.answer(b'{"jsonrpc":"2.0","id":4,"method":"agent/list"}\n')
    assert listed["result"]["agents"][0]["name"] == "cat"
    # End of input behaves like shutdown + exit.
    assert await host.close() == 0


async def test_framing_flag_forces_lsp_even_for_a_json_first_byte() -> None:
    host = await Pipe.spawn("--framing", "lsp")
    host.send(_line(INIT).encode() + b"\r\n\r\n")
    head = await host.read_line()
    assert head.startswith(b"Content-Length:")
    assert await host.close() == 0


async def test_tcp_connections_detect_ndjson_too(tmp_path: Path) -> None:
    host = await TcpHost.start(tmp_path)
    try:
        reader, writer = await host.open()
        init = {**INIT, "params": {"initializationOptions": {"authToken": host.token}}}
        writer.write(_line(init).encode() + b"\n")
        answer = json.loads(await asyncio.wait_for(reader.readline(), 20))
        assert answer["result"]["serverInfo"]["name"] == "oma-host"
        writer.close()
    finally:
        await host.stop()


def _session_file(tmp_path: Path, script: str) -> Path:
    """docs/debugging.md's piped session: initialize, a process agent, a stream; no shutdown."""
    config = {
        "name": "slow",
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script], "input": "none"},
    }
    stream = {"agentId": "agent-1", "input": "go", "partialResultToken": "s"}
    session = tmp_path / "session.ndjson"
    session.write_text(
        "\n".join(
            _line(message)
            for message in (
                INIT,
                {"jsonrpc": "2.0", "id": 2, "method": "agent/create", "params": {"config": config}},
                {"jsonrpc": "2.0", "id": 3, "method": "agent/stream", "params": stream},
            )
        )
        + "\n"
    )
    return session


async def _pipe_in(session: Path, *flags: str) -> tuple[int, list[dict[str, Any]]]:
    with session.open("rb") as stdin:
        process = await asyncio.create_subprocess_exec(
            *host_argv(*flags),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, [json.loads(line) for line in out.splitlines()]


async def test_end_of_piped_ndjson_input_lets_the_requests_in_flight_finish(
    tmp_path: Path,
) -> None:
    code, answers = await _pipe_in(_session_file(tmp_path, "sleep 1; echo done"))
    assert code == 0
    assert [answer.get("id") for answer in answers] == [1, 2, None, 3]
    assert answers[2]["params"] == {"token": "s", "value": {"type": "text", "data": "done\n"}}
    assert answers[3]["result"]["success"] is True and answers[3]["result"]["output"] == "done\n"


async def test_the_drain_after_end_of_input_is_bounded(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    session = _session_file(tmp_path, f"echo $$ > {pid_file}; exec sleep 60")
    code, answers = await _pipe_in(session, "--drain-timeout", "1")
    assert code == 0
    assert answers[-1]["id"] == 3 and answers[-1]["error"]["code"] == -32800
    assert wait_dead(int(pid_file.read_text()))
