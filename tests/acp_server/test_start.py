"""How ``oma-host acp`` starts: ``initialize`` is answered before the door
(and the ACP library under it) is imported, with the answer the library's
models give, and the door then serves every request as before, whichever
path ``initialize`` took."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from acp import PROTOCOL_VERSION
from acp.schema import ClientCapabilities, InitializeResponse

from oma_host.acp_server.agents import AgentsReading, ServedAgents
from oma_host.acp_server.auth import initialize_answer
from oma_host.acp_server.handshake import PROTOCOL_VERSION as DOOR_VERSION
from oma_host.acp_server.handshake import plain_initialize
from oma_host.core.config import AgentConfig
from tests.acp_server.helpers import Door, new_session, step
from tests.acp_server.raw_editor import raw_editor, stderr_of


def test_answering_initialize_imports_nothing_of_the_acp_library() -> None:
    """What the door imports before its first answer: the command line, the
    agents file's checks, the wire and the handshake, none of them ``acp``."""
    probe = (
        "import sys\n"
        "import oma_host.cli.main, oma_host.acp_server.serve, oma_host.acp_server.wire\n"
        "from oma_host.acp_server.auth import initialize_answer\n"
        "from oma_host.acp_server.agents import read_agents, serve_reading\n"
        "agents = serve_reading(read_agents(None))\n"
        "initialize_answer(agents.auth_methods, {'auth': {'terminal': True}})\n"
        "print(sorted(m for m in sys.modules if m == 'acp' or m.startswith(('acp.', "
        "'oma_host.acp_server.door', 'oma_host.acp_server.routes'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"ANTHROPIC_API_KEY": "sk-ant-x", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# A notification of each kind the door sends most, checked both ways below.
_NOTIFICATIONS = [
    {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hi"},
        },
    },
    {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "read a.txt",
            "kind": "read",
            "status": "pending",
            "locations": [{"path": "/p/a.txt", "line": 3}],
        },
    },
    {"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}},
]

_LOADED = (
    "import json, sys\n"
    "if sys.argv[1] == 'door':\n"
    "    from oma_host.acp_server.lazy_door import _import_door\n"
    "    _import_door()\n"
    "else:\n"
    "    import acp\n"
    "from acp.schema import SessionNotification\n"
    "deferred = not SessionNotification.__pydantic_complete__\n"
    "dumps = [SessionNotification.model_validate(n).model_dump(mode='json', by_alias=True,"
    " exclude_none=True) for n in json.loads(sys.argv[2])]\n"
    "print(json.dumps({'deferred': deferred, 'dumps': dumps}))\n"
)


def _loaded(how: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, how, json.dumps(_NOTIFICATIONS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def test_the_door_loads_the_acp_library_deferred_and_it_validates_the_same() -> None:
    """The door loads the ACP library with its models' validators deferred
    (:mod:`oma_host.wire.acp_library`, about a quarter second of CPU less per
    door), and what they accept and produce is what the library's own give."""
    door = _loaded("door")
    plain = _loaded("plain")
    assert door["deferred"] is True
    assert plain["deferred"] is False
    assert door["dumps"] == plain["dumps"]
    assert door["dumps"][1]["update"]["locations"] == [{"path": "/p/a.txt", "line": 3}]


CAPABILITIES = [
    {},
    {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    {"auth": {"terminal": True}},
    {"auth": {"terminal": False}, "fs": {"readTextFile": False}},
]


@pytest.mark.parametrize("capabilities", CAPABILITIES)
def test_the_plain_answer_is_the_librarys_model_dump(capabilities: dict[str, Any]) -> None:
    reading = AgentsReading(
        None,
        [
            {"name": "a", "provider": "anthropic", "model": "m"},
            {"name": "g", "provider": "gemini", "model": "m"},
            {"name": "k", "provider": "openai", "model": "m", "apiKey": "sk-own"},
            {"name": "p", "backend": {"kind": "process", "command": "cat"}},
        ],
    )
    params = {"protocolVersion": 1, "clientCapabilities": capabilities}
    assert plain_initialize(params) == capabilities
    answer = initialize_answer(reading.auth_methods, capabilities)
    model = InitializeResponse.model_validate(answer)
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    assert answer == dumped
    assert DOOR_VERSION == PROTOCOL_VERSION
    ClientCapabilities.model_validate(capabilities)  # what the door keeps of them
    terminal = capabilities.get("auth", {}).get("terminal") is True
    assert (answer["authMethods"][0]["type"] == "terminal") is terminal


@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": "1"},
        {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": "yes"}}},
        {"protocolVersion": 1, "clientCapabilities": {"_meta": {"x": 1}}},
        {"protocolVersion": 1, "clientInfo": {"name": "z"}},
        {"protocolVersion": 1, "extra": True},
        None,
    ],
)
def test_anything_but_the_plain_shape_goes_to_the_model(params: Any) -> None:
    assert plain_initialize(params) is None


async def test_both_paths_answer_alike_and_the_door_serves_after_either(door: Door) -> None:
    plain = {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}}
    # The same, but with what only the model path takes (_meta, clientInfo.title absent).
    modelled = {**plain, "clientCapabilities": {"auth": {"terminal": True}, "_meta": {"x": 1}}}
    answers = []
    for params in (plain, modelled):
        async with raw_editor(door) as editor:
            answer = await editor.call("initialize", params)
            new = await editor.call("session/new", new_session(door.cwd)["params"])
            refused = await editor.call("initialize", {})
            unknown = await editor.call("no/such", {})
        assert new["result"]["sessionId"].startswith("sess_")
        assert refused["error"]["code"] == -32602
        assert unknown["error"]["code"] == -32601
        answers.append(answer["result"])
    assert answers[0] == answers[1]
    assert answers[0]["authMethods"][0]["id"] == "oma-host-login"


def test_a_malformed_first_initialize_is_refused_and_the_next_served(door: Door) -> None:
    bad, good = door.run(step("initialize"), step("initialize", protocolVersion=1))
    assert bad["error"]["code"] == -32602
    assert "protocolVersion" in bad["error"]["message"]
    assert good["result"]["protocolVersion"] == 1


def test_the_door_serves_the_requests_it_says_before_it_is_loaded() -> None:
    from oma_host.acp_server.door import OmaAcpAgent
    from oma_host.acp_server.handshake import SERVED_REQUESTS
    from oma_host.acp_server.routes import door_routes

    door = OmaAcpAgent(ServedAgents([AgentConfig(name="a", model="m")]), ":memory:", 60.0)
    requests, notifications = door_routes(door)
    assert set(requests) == SERVED_REQUESTS
    assert set(notifications) == {"session/cancel"}


@pytest.mark.parametrize(
    ("capabilities", "path", "what"),
    [
        ("all", "clientCapabilities", "a string"),
        (7, "clientCapabilities", "a number"),
        ([True], "clientCapabilities", "an array"),
        ({"fs": "yes"}, "clientCapabilities.fs", "a string"),
        ({"auth": [1]}, "clientCapabilities.auth", "an array"),
    ],
)
async def test_capabilities_that_are_no_object_are_invalid_params_at_their_path(
    door: Door, capabilities: Any, path: str, what: str
) -> None:
    """The schema's model would put its default in their place; the door
    says what was wrong and where, and serves the next ``initialize``."""
    async with raw_editor(door) as editor:
        bad = await editor.call(
            "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities}
        )
        good = await editor.call("initialize", {"protocolVersion": 1})
    assert bad["error"]["code"] == -32602
    assert bad["error"]["message"] == f"initialize: {path} must be an object, not {what}"
    assert bad["error"]["data"]["path"] == path
    assert good["result"]["protocolVersion"] == 1


async def test_a_malformed_cancel_is_one_warning_line_each(door: Door) -> None:
    async with raw_editor(door) as editor:
        await editor.start(door)
        for params in ({"sessionId": 5}, "x", {"sessionId": "sess_nope"}):
            editor.send("session/cancel", params, notify=True)
        alive = await editor.call("session/list", {})
        stderr = await stderr_of(editor)
    assert len(alive["result"]["sessions"]) == 1  # still serving
    lines = stderr.splitlines()
    assert len(lines) == 3, stderr
    assert all(line.startswith("oma-host WARNING") and "session/cancel" in line for line in lines)
    assert "Traceback" not in stderr
    assert "sessionId: Input should be a valid string" in lines[0]
    assert "no session 'sess_nope'" in lines[2]
