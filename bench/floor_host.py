"""The floor for the concurrency benchmark: the least a Python JSON-RPC host
on aiohttp can do per ``agent/run``, to read the host's figure against.

It reads Content-Length frames on stdin, answers ``initialize`` and
``agent/create``, and for each ``agent/run`` POSTs one fixed Anthropic
request to the agent's ``baseURL`` on one ``aiohttp.ClientSession`` (1,000
connections), parses the JSON reply and writes one answer frame. No
validation, no agent, no trace, no redaction, no timeouts: a lower bound,
not a host. ``bench/concurrency.py`` runs it as an informative variant.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import aiohttp

KEY = "bench-key-not-secret"
BODY = {
    "model": "bench",
    "max_tokens": 4096,
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
}
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}


async def serve() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    session: aiohttp.ClientSession | None = None
    url = ""
    running: set[asyncio.Task[None]] = set()

    def answer(msg_id: Any, result: Any) -> None:
        data = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}).encode()
        writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(data), data))

    async def run(msg_id: Any) -> None:
        assert session is not None
        async with session.post(url, json=BODY, headers=HEADERS) as response:
            reply = json.loads(await response.read())
        answer(msg_id, {"success": True, "output": reply["content"][0]["text"]})

    while header := await reader.readline():
        length = int(header.split(b":")[1])
        await reader.readline()  # the blank line after the header
        message = json.loads(await reader.readexactly(length))
        method = message.get("method")
        if method == "initialize":
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1000))
            answer(message["id"], {"capabilities": {}})
        elif method == "agent/create":
            url = message["params"]["config"]["baseURL"] + "/v1/messages"
            answer(message["id"], {"agentId": "floor"})
        elif method == "agent/run":
            task = asyncio.ensure_future(run(message["id"]))
            running.add(task)
            task.add_done_callback(running.discard)
        elif method == "exit":
            break
        elif "id" in message:  # shutdown and anything else
            answer(message["id"], None)
    if session is not None:
        await session.close()


if __name__ == "__main__":
    asyncio.run(serve())
