"""The editor's ``mcpServers`` from ``session/new`` and ``session/load``
behind ``oma-host acp``, driven by the TypeScript SDK's client: an LLM agent
(the provider simulator's scripted model) calls their tools, real MCP
servers (``server-everything`` from npm, the ``mcp`` SDK's fault server); a
wrapped ACP agent gets them passed on; a process agent goes on without them;
a transport the host does not speak is refused."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import (
    Door,
    acp_agent,
    initialize,
    new_session,
    prompt,
    reply_text,
    step,
    text,
)
from tests.acp_server.raw_editor import raw_editor
from tests.acp_server.test_schema_v1 import AGENT, CLIENT, Checker
from tests.builders import reply, tool_use
from tests.npm_packages import ensure_npm_packages
from tests.server.helpers import pid_alive

SERVERS = Path(__file__).resolve().parent.parent / "llm" / "mcp_servers"
EVERYTHING = {
    "name": "everything",
    "command": str(SERVERS / "node_modules" / ".bin" / "mcp-server-everything"),
    "args": ["stdio"],
    "env": [],
}
FAULTS = {
    "name": "faults",
    "command": os.environ.get("PYTHON", "python3"),
    "args": [str(SERVERS / "faults.py")],
    "env": [],
}


@pytest.fixture(scope="module", autouse=True)
def npm_servers() -> None:
    ensure_npm_packages(SERVERS, "@modelcontextprotocol/server-everything")


def _results(door: Door, request: int) -> dict[str, dict[str, Any]]:
    content = door.sim.requests[request].body["messages"][-1]["content"]
    return {block["tool_use_id"]: block for block in content if block["type"] == "tool_result"}


def test_an_llm_agent_calls_the_editors_servers_tools(door: Door) -> None:
    door.sim.script(
        reply(
            tool_use("e", "everything__echo", message="hello from the model"),
            tool_use("f", "faults__echo", text="ping"),
        ),
        Reply.text("done"),
    )
    _, _, turn = door.run(
        initialize(),
        new_session(door.cwd, [EVERYTHING, FAULTS]),
        prompt(text("use the tools")),
        permission="allow_once",  # MCP tools ask by default: the editor is asked
    )
    assert turn["result"]["stopReason"] == "end_turn"
    offered = {tool["name"] for tool in door.sim.requests[0].body["tools"]}
    assert {"everything__echo", "faults__echo"} <= offered
    asked = [u["permissionRequest"] for u in turn["updates"] if "permissionRequest" in u]
    assert len(asked) == 2
    results = _results(door, 1)
    assert "hello from the model" in str(results["e"]["content"])
    assert not results["e"].get("is_error")
    found = re.search(r"echo: ping \(pid (\d+)\)", str(results["f"]["content"]))
    assert found, results["f"]
    # The server ended with the session's process.
    assert not pid_alive(int(found.group(1)))


def test_session_load_adds_the_editors_servers_to_the_loaded_session(door: Door) -> None:
    door.sim.script(
        Reply.text("first"),
        reply(tool_use("f", "faults__echo", text="after load")),
        Reply.text("done"),
    )
    _, new, _ = door.run(initialize(), new_session(door.cwd), prompt(text("hello")))
    assert "tools" not in door.sim.requests[0].body or not any(
        tool["name"].startswith("faults__") for tool in door.sim.requests[0].body["tools"]
    )
    session_id = new["result"]["sessionId"]
    _, loaded, turn = door.run(
        initialize(),
        step("session/load", sessionId=session_id, cwd=str(door.cwd), mcpServers=[FAULTS]),
        prompt(text("use it"), session=session_id),
        permission="allow_once",
    )
    assert "error" not in loaded, loaded
    assert turn["result"]["stopReason"] == "end_turn"
    assert "echo: after load" in str(_results(door, 2)["f"]["content"])


def test_a_wrapped_acp_agent_gets_the_editors_servers(door: Door, acp_agent_dir: Path) -> None:
    door.write_agents(first=acp_agent())
    http = {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp", "headers": []}
    _, _, turn = door.run(
        initialize(), new_session(door.cwd, [FAULTS, http]), prompt(text("[mcp]"))
    )
    # The scripted agent takes no HTTP servers: only the stdio one reaches it.
    assert turn["result"]["stopReason"] == "end_turn"
    assert json.loads(reply_text(turn["updates"])) == [FAULTS]


def test_a_process_agent_goes_on_without_the_editors_servers(door: Door) -> None:
    door.write_agents(first={"name": "cat", "backend": {"kind": "process", "command": "cat"}})
    _, new, turn = door.run(
        initialize(), new_session(door.cwd, [FAULTS]), prompt(text("still here"))
    )
    assert "result" in new
    assert reply_text(turn["updates"]) == "still here"


def test_an_sse_server_is_refused_naming_it(door: Door) -> None:
    sse = {"type": "sse", "name": "events", "url": "http://127.0.0.1:9/sse", "headers": []}
    _, refused = door.run(initialize(), new_session(door.cwd, [FAULTS, sse]))
    assert refused["error"]["code"] == -32602
    message = str(refused["error"])
    assert "mcpServers[1]" in message and "'events'" in message and "sse" in message


def test_the_door_advertises_http_and_not_sse(door: Door) -> None:
    (answer,) = door.run(initialize())
    capabilities = answer["result"]["agentCapabilities"]["mcpCapabilities"]
    assert capabilities == {"http": True, "sse": False}


async def _ask_through(door: Door, capabilities: dict[str, Any], answer: dict[str, Any]) -> str:
    """One turn whose model calls the fault server's ``ask`` (a form
    elicitation), with an editor of ``capabilities`` that answers any
    ``elicitation/create`` with ``answer``; what the tool answered."""
    door.write_agents(first=door.llm(permissions=[{"tool": "faults__ask", "action": "allow"}]))
    door.sim.script(reply(tool_use("a", "faults__ask")), Reply.text("done"))
    async with raw_editor(door) as editor:
        editor.on_request = lambda request: (
            {"result": answer} if request["method"] == "elicitation/create" else {"result": {}}
        )
        init = {"protocolVersion": 1, "clientCapabilities": capabilities}
        assert "result" in await editor.call("initialize", init)
        new = await editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": [FAULTS]})
        session_id = new["result"]["sessionId"]
        turn = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("ask me")]}
        )
        assert turn["result"]["stopReason"] == "end_turn", turn
        asked = [m for m in editor.received if m.get("method") == "elicitation/create"]
    result = _results(door, 1)["a"]
    if capabilities.get("elicitation"):
        (request,) = asked
        # The request and its answer, as the stable v1 schema has them.
        checker = Checker(door.client_dir)
        checker.check(AGENT, request)
        checker.check(CLIENT, {"jsonrpc": "2.0", "id": request["id"], "result": answer})
        assert not checker.failures, checker.failures
        assert (AGENT, "elicitation/create", "CreateElicitationRequest") in checker.checked
        params = request["params"]
        assert params["sessionId"] == session_id and params["mode"] == "form"
        assert params["message"] == "MCP server 'faults' asks: Who is there?"
        assert set(params["requestedSchema"]["properties"]) == {"name", "number"}
    else:
        assert asked == []
    return str(result["content"])


async def test_an_mcp_servers_form_is_answered_by_the_editor(door: Door) -> None:
    accepted = {"action": "accept", "content": {"name": "Ada", "number": 7}}
    said = await _ask_through(door, {"elicitation": {"form": {}}}, accepted)
    assert said == "hello Ada, 7"


async def test_a_form_the_editor_declines_is_declined(door: Door) -> None:
    said = await _ask_through(door, {"elicitation": {"form": {}}}, {"action": "decline"})
    assert said == "the user answered decline"


async def test_an_editor_without_forms_has_the_server_declined(door: Door) -> None:
    accepted = {"action": "accept", "content": {"name": "Ada", "number": 7}}
    said = await _ask_through(door, {}, accepted)
    assert said == "the user answered decline"


def test_an_mcp_server_that_cannot_start_is_a_notice(door: Door) -> None:
    """The editor's server exits before its handshake: the turn fails with
    the server named, and a client that takes notices is shown one."""
    crashing = {**FAULTS, "name": "crashing", "args": [*FAULTS["args"], "crash-at-start"]}
    _, _, turn = door.run(
        initialize(session={"notices": {}}),
        new_session(door.cwd, [crashing]),
        prompt(text("hello")),
    )
    assert "'crashing'" in turn["error"]["message"]
    notices = [u for u in turn["updates"] if u.get("sessionUpdate") == "notice"]
    assert [(n["severity"], n["title"]) for n in notices] == [("error", "An MCP server failed")]
    assert "'crashing'" in notices[0]["description"]
