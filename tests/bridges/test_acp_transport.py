"""The ACP transport numbers every request on the wire: the bridge's own
requests and the library's get their answers, however they interleave, against
the scripted agent of the interop tests (a real ACP process). It reads the
agent's stdout as it arrives: lines split across writes, a last line without
its newline, an over-long line, and the arrival order of what the library
must see first, against real processes writing exactly that."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

from oma_host.bridges.acp.transport import NdjsonPipe
from oma_host.process.groups import GroupProcess, end_process_group, spawn_group
from tests.npm_packages import ensure_npm_packages

AGENT_DIR = Path(__file__).resolve().parent.parent / "interop" / "acp_agent"


@pytest.fixture(autouse=True)
def _agent_packages() -> None:
    """The scripted agent's npm packages, installed on first use like the
    interop tests' (a missing Node.js fails the test; it never skips)."""
    ensure_npm_packages(AGENT_DIR, "@agentclientprotocol/sdk/package.json")


class _Client:
    """Answers nothing: the agent asks nothing of it in these turns."""


async def test_the_pipes_requests_and_the_librarys_each_get_their_answer(tmp_path: Path) -> None:
    updates: list[Any] = []
    pipe = NdjsonPipe(updates.append)
    process = await _spawn(pipe, "node", str(AGENT_DIR / "agent.mjs"))
    conn = acp.connect_to_agent(_Client(), pipe)  # type: ignore[arg-type]
    try:
        capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=False, write_text_file=False), terminal=False
        )
        initialize = {
            "protocolVersion": acp.PROTOCOL_VERSION,
            "clientCapabilities": capabilities.model_dump(by_alias=True),
        }
        info = await asyncio.wait_for(pipe.request("initialize", initialize).answer, 30)
        assert info["protocolVersion"] == acp.PROTOCOL_VERSION
        # The library's first request (its id 0, as the pipe's first was) and
        # the pipe's second in flight at once.
        library = asyncio.ensure_future(conn.new_session(cwd=str(tmp_path), mcp_servers=[]))
        await asyncio.sleep(0)  # the library's task writes its request first
        ours = pipe.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        library_session = await asyncio.wait_for(library, 30)
        session = await asyncio.wait_for(ours.answer, 30)
        assert session["sessionId"] and library_session.session_id
        assert library_session.session_id != session["sessionId"]
        prompt = {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hi"}]}
        answer = await asyncio.wait_for(pipe.request("session/prompt", prompt).answer, 30)
        assert answer == {"stopReason": "end_turn"}
        await asyncio.sleep(0)  # updates are handed over soon, in arrival order
        texts = [
            params["update"]["content"]["text"]
            for params in updates
            if params["update"]["sessionUpdate"] == "agent_message_chunk"
        ]
        assert texts == ["you said: hi"]
    finally:
        await conn.close()
        await end_process_group(process)
    # Closed: a request fails at once, as it would through the library.
    with pytest.raises(ConnectionError):
        await pipe.request("session/prompt", {}).answer


async def _spawn(pipe: NdjsonPipe, *argv: str) -> GroupProcess:
    process = await spawn_group(list(argv), cwd=None, env=dict(os.environ), stdout_sink=pipe)
    assert process.stdin is not None and process.stdout is None  # the pipe reads it
    pipe.attach(process.stdin)
    return process


def _agent(script: str) -> list[str]:
    """A process that reads the pipe's first request, then runs ``script``
    with its id in ``rid`` and ``out`` writing and flushing raw text."""
    prelude = (
        "import json, sys, time\n"
        "rid = json.loads(sys.stdin.readline())['id']\n"
        "def out(text):\n"
        "    sys.stdout.write(text); sys.stdout.flush()\n"
    )
    return [sys.executable, "-c", prelude + script]


async def test_lines_split_across_writes_and_a_last_line_without_its_newline() -> None:
    updates: list[Any] = []
    pipe = NdjsonPipe(updates.append)
    script = (
        "update = json.dumps({'jsonrpc': '2.0', 'method': 'session/update', 'params': {'n': 1}})\n"
        "answer = json.dumps({'jsonrpc': '2.0', 'id': rid, 'result': {'stopReason': 'end_turn'}})\n"
        "out(update[:10]); time.sleep(0.05); out(update[10:] + '\\n' + answer[:7])\n"
        "time.sleep(0.05); out(answer[7:] + '\\n\\n')\n"
        "out(json.dumps({'jsonrpc': '2.0', 'method': 'x/last', 'params': {}}))\n"  # no newline
    )
    process = await _spawn(pipe, *_agent(script))
    try:
        answer = await asyncio.wait_for(pipe.request("session/prompt", {}).answer, 30)
        assert answer == {"stopReason": "end_turn"}
        await asyncio.sleep(0)  # updates are handed over soon
        assert updates == [{"n": 1}]
        last = await asyncio.wait_for(pipe.receive(), 30)
        assert last == {"jsonrpc": "2.0", "method": "x/last", "params": {}}
        assert await asyncio.wait_for(pipe.receive(), 30) is None  # the end of its stdout
        assert pipe.eof and pipe.fault is None
    finally:
        await pipe.close()
        await end_process_group(process)


async def test_an_over_long_line_is_a_fault_that_fails_the_requests_in_flight() -> None:
    pipe = NdjsonPipe(lambda _: None, line_limit=1000)
    process = await _spawn(pipe, *_agent("out('x' * 600); out('x' * 600); time.sleep(30)"))
    try:
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(pipe.request("session/prompt", {}).answer, 30)
        assert pipe.fault == "it wrote a line longer than 1000 bytes on stdout"
        assert await asyncio.wait_for(pipe.receive(), 30) is None
    finally:
        await pipe.close()
        await end_process_group(process)


async def test_what_follows_a_message_for_the_library_waits_for_it_in_arrival_order() -> None:
    """The agent's request, an update and the answer to the pipe's request in
    one write: the library must receive the request before the update is
    handed over or the answer resolves (it starts a task per request)."""
    updates: list[Any] = []
    pipe = NdjsonPipe(updates.append)
    script = (
        "lines = [\n"
        "    {'jsonrpc': '2.0', 'id': 'a', 'method': 'fs/read_text_file', 'params': {}},\n"
        "    {'jsonrpc': '2.0', 'method': 'session/update', 'params': {'n': 1}},\n"
        "    {'jsonrpc': '2.0', 'id': rid, 'result': {'stopReason': 'end_turn'}},\n"
        "]\n"
        "out(''.join(json.dumps(line) + '\\n' for line in lines)); time.sleep(30)\n"
    )
    process = await _spawn(pipe, *_agent(script))
    try:
        call = pipe.request("session/prompt", {})
        request = await asyncio.wait_for(pipe.receive(), 30)
        assert request["id"] == "a" and request["method"] == "fs/read_text_file"
        # One write of under PIPE_BUF bytes arrives whole: the rest is here, unrouted.
        await asyncio.sleep(0.1)
        assert not call.answer.done() and updates == []
        receiving = asyncio.ensure_future(pipe.receive())  # routes the rest in order
        assert await asyncio.wait_for(call.answer, 30) == {"stopReason": "end_turn"}
        assert updates == [{"n": 1}]
        receiving.cancel()
    finally:
        await pipe.close()
        await end_process_group(process)
