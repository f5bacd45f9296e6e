"""The ACP transport numbers every request on the wire: the bridge's own
requests and the library's get their answers, however they interleave, against
the scripted agent of the interop tests (a real ACP process)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

from bridges.acp.transport import LINE_LIMIT, NdjsonPipe
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
    process = await asyncio.create_subprocess_exec(
        "node",
        str(AGENT_DIR / "agent.mjs"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=LINE_LIMIT,
    )
    updates: list[Any] = []
    pipe = NdjsonPipe(process, updates.append)
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
        process.kill()
        await process.wait()
    # Closed: a request fails at once, as it would through the library.
    with pytest.raises(ConnectionError):
        await pipe.request("session/prompt", {}).answer
