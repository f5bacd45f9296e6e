"""An MCP server written with the official ``mcp`` SDK, for the fault tests.

``python faults.py MODE``: ``ok`` serves its tools over stdio; ``http PORT``
serves them over streamable HTTP on 127.0.0.1:PORT at ``/mcp``;
``crash-at-start`` writes to stderr (a secret from its environment among it)
and exits before the handshake. In every mode ``die`` ends the process in the
middle of a call, and ``fail`` raises, which the SDK answers as an error result.
``big`` answers with a text of the size asked, ``hang`` never answers, and
``garble`` writes a line that is not JSON on the protocol's stdout and never
answers. ``move`` renames a file in the server's working directory: its paths
are in fields the host cannot know the meaning of (and ``path`` is a decoy), as
an MCP server's often are. ``read`` answers the text of the file a ``file:``
URI names, and ``read_in`` that of the file ``name`` in the folder ``dir``.
``ask`` asks the client a form's questions (an elicitation) and answers with
what came back.
"""

from __future__ import annotations

import os
import sys
from urllib.parse import unquote, urlsplit

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"

if MODE == "crash-at-start":
    token = os.environ.get("FAULTS_API_TOKEN", "")
    print(f"faults: cannot start, bad configuration (token {token})", file=sys.stderr)
    sys.exit(3)

server = MCPServer("faults")


@server.tool(description="Echo the text back, with the process id of the server.")
def echo(text: str) -> str:
    return f"echo: {text} (pid {os.getpid()})"


class Visitor(BaseModel):
    name: str = Field(description="Your name")
    number: int = Field(description="Your favourite number")


@server.tool(description="Ask the user for their name and number (a form elicitation).")
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit(message="Who is there?", schema=Visitor)
    if answer.action == "accept":
        return f"hello {answer.data.name}, {answer.data.number}"
    return f"the user answered {answer.action}"


@server.tool(description="Raise an error inside the tool.")
def fail(reason: str) -> str:
    raise ValueError(f"the tool failed on purpose: {reason}")


@server.tool(description="End the server process in the middle of the call.")
def die() -> str:
    print("faults: dying in the middle of a call", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(description="Answer with a text of size bytes.")
def big(size: int) -> str:
    return "x" * size


@server.tool(description="Never answer.")
async def hang() -> str:
    await anyio.sleep(3600)
    return "never"


@server.tool(description="Write a line that is not JSON where the answer goes, and never answer.")
async def garble() -> str:
    sys.stdout.write("this is not JSON\n")
    sys.stdout.flush()
    await anyio.sleep(3600)
    return "never"


@server.tool(description="Move the file source to target (path is only a label).")
def move(source: str, target: str, path: str = "") -> str:
    os.replace(source, target)
    return f"moved {source} to {target}"


@server.tool(description="The text of the file a file: URI names.")
def read(uri: str) -> str:
    with open(unquote(urlsplit(uri).path), encoding="utf-8") as file:
        return file.read()


@server.tool(description="The text of the file name in the folder dir.")
def read_in(dir: str, name: str) -> str:
    with open(os.path.join(dir, name), encoding="utf-8") as file:
        return file.read()


if MODE == "http":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
else:
    server.run("stdio")
