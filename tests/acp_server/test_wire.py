"""The door's own JSON-RPC transport (``oma_host/acp_server/wire.py``),
driven through the real ``oma-host acp`` by a client that writes and reads
the lines itself, so it can send what no SDK client would: lines that are
not JSON, unknown methods, params the schema refuses, requests that overlap
a running prompt, and an error answer to the door's own request; and it
reads what an SDK client would not (an update kind its schema does not know)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import NewSessionRequest, PromptRequest
from pydantic import ValidationError

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, acp_agent, text
from tests.acp_server.raw_editor import raw_editor, stderr_of
from tests.builders import reply, tool_use
from tests.server.helpers import wait_dead_async


def schema_errors(model: type[Any], params: Any) -> list[dict[str, Any]]:
    """The errors the schema's model gives for ``params``, as JSON carries them."""
    with pytest.raises(ValidationError) as refused:
        model.model_validate(params)
    errors: list[dict[str, Any]] = json.loads(json.dumps(refused.value.errors(), default=str))
    return errors


async def test_lines_that_are_not_json_rpc_are_skipped_and_logged(door: Door) -> None:
    async with raw_editor(door) as editor:
        editor.send_line(b"{this is not json\n")
        editor.send_line(b"[1, 2, 3]\n")
        editor.send_line(b"\n")
        init = await editor.call("initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1
        assert len(editor.received) == 1  # nothing answered the garbage
        err = await stderr_of(editor)
    assert "skipped a line: the line is not valid JSON: Expecting property name" in err
    assert "skipped a line that is not a JSON-RPC message (a JSON list)" in err


async def test_methods_the_door_does_not_serve_are_method_not_found(door: Door) -> None:
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        for method in ("session/set_model", "_oma/extension", "no/such"):
            answer = await editor.call(method, {"sessionId": session_id, "modeId": "x"})
            assert answer["error"] == {
                "code": -32601,
                "message": f"oma-host acp does not serve {method!r}",
                "data": {"method": method},
            }
        # Unknown notifications have no answer and leave the connection working.
        editor.send("no/such/notification", {}, notify=True)
        editor.send("_oma/notice", {}, notify=True)
        listed = await editor.call("session/list", {})
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
        assert len(editor.received) == 7  # and the session's commands
        err = await stderr_of(editor)
    assert "no/such/notification" in err
    assert "_oma/notice" not in err  # extension notifications are optional by definition


@pytest.mark.parametrize(
    ("model", "method", "params"),
    [
        (NewSessionRequest, "session/new", {"mcpServers": []}),
        (PromptRequest, "session/prompt", {"sessionId": "$session", "prompt": "hi"}),
        (
            PromptRequest,
            "session/prompt",
            {"sessionId": "$session", "prompt": [{"type": "text", "text": 5}]},
        ),
        (PromptRequest, "session/prompt", {"sessionId": 7, "prompt": [text("hi")]}),
        (PromptRequest, "session/prompt", None),
    ],
)
async def test_params_the_schema_refuses_are_invalid_params_with_its_errors(
    door: Door, model: type[Any], method: str, params: Any
) -> None:
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        if isinstance(params, dict) and params.get("sessionId") == "$session":
            params = {**params, "sessionId": session_id}
        answer = await editor.call(method, params)
    assert answer["error"]["code"] == -32602
    errors = schema_errors(model, params)
    assert answer["error"]["data"] == {"errors": errors}
    # The message says where the first problem was and what it was.
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "params"
    assert answer["error"]["message"].startswith(f"{method}: invalid params: {where}: ")
    assert first["msg"] in answer["error"]["message"]
    assert not door.sim.requests  # nothing reached the provider


def _untimed(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The updates without what differs between two sessions: the times, and
    the message ids' epoch (each session has its own; the index stays)."""
    return [
        {
            k: v.rpartition("-")[2] if k == "messageId" else v
            for k, v in update.items()
            if k != "updatedAt"
        }
        for update in updates
    ]


async def test_a_prompt_the_models_validate_answers_as_the_plain_shape_does(door: Door) -> None:
    """The shape test (plain text blocks, no model) and the model path give
    the same updates and the same answer for the same turn."""
    door.sim.script(*(Reply.text("the same reply", chunk_size=5) for _ in range(2)))
    async with raw_editor(door) as editor:
        plain_id = await editor.start(door)
        plain = await editor.call(
            "session/prompt", {"sessionId": plain_id, "prompt": [text("hi"), text("there")]}
        )
        modelled = await editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        modelled_id = modelled["result"]["sessionId"]
        # _meta and the snake_case name are the schema's too, but not the plain shape.
        blocks = [{**text("hi"), "_meta": {"from": "test"}}, text("there")]
        checked = await editor.call(
            "session/prompt", {"session_id": modelled_id, "prompt": blocks, "_meta": {}}
        )
        assert checked["result"] == plain["result"]
        assert checked["result"]["stopReason"] == "end_turn"
        # Alike but for the time each session's title was set.
        assert _untimed(editor.updates_of(modelled_id)) == _untimed(editor.updates_of(plain_id))
        assert editor.updates_of(plain_id)[-1]["sessionUpdate"] == "usage_update"
    first, second = (request.body["messages"][-1]["content"] for request in door.sim.requests)
    assert [block["text"] for block in first] == [block["text"] for block in second]
    assert [block["text"] for block in first] == ["hi", "there"]


async def test_a_wrapped_agents_update_of_a_kind_the_library_does_not_know_passes_through(
    door: Door, acp_agent_dir: Path
) -> None:
    door.write_agents(first=acp_agent())
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        answer = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("[plan][future] hi")]}
        )
        assert answer["result"]["stopReason"] == "end_turn"
        updates = editor.updates_of(session_id)
    kinds = [update["sessionUpdate"] for update in updates]
    # As the agent sent it, in its place among the updates the library knows.
    assert updates[kinds.index("future_thing")] == {"sessionUpdate": "future_thing", "detail": 42}
    assert kinds.index("current_mode_update") < kinds.index("future_thing")
    assert kinds.index("future_thing") < kinds.index("agent_message_chunk")


async def test_requests_are_answered_while_a_prompt_runs_and_cancel_ends_it(door: Door) -> None:
    door.sim.script(Reply.text("one two three four five six", chunk_size=4, event_delay_s=0.3))
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        turn_id = editor.send("session/prompt", {"sessionId": session_id, "prompt": [text("go")]})
        listed = await editor.call("session/list", {})
        assert any(s["sessionId"] == session_id for s in listed["result"]["sessions"])
        assert not any(message.get("id") == turn_id for message in editor.received)
        while not editor.replies_of(session_id):  # the turn has started streaming
            await editor.read()
        editor.send("session/cancel", {"sessionId": session_id}, notify=True)
        answer = await editor.answer(turn_id)
        assert answer["result"]["stopReason"] == "cancelled"
        streamed = editor.updates_of(session_id)
        # Nothing of the turn comes after its answer.
        after = await editor.call("session/list", {})
        assert "result" in after
        assert editor.updates_of(session_id) == streamed
    reply = "".join(u["content"]["text"] for u in streamed if "content" in u)
    assert reply and "one two three four five six".startswith(reply)
    assert reply != "one two three four five six"


@pytest.mark.parametrize(
    "error",
    [
        {"code": -32603, "message": "the editor broke", "data": None},
        # Malformed: read as a -32603 all the same (the peer core's one reading).
        "the editor broke",
        {"message": "the editor broke"},
    ],
)
async def test_an_error_answer_to_a_permission_request_denies_the_tool(
    door: Door, error: Any
) -> None:
    (door.cwd / "notes.txt").write_text("the notes")
    rules = [{"tool": "file_read", "action": "ask"}]
    door.write_agents(first=door.llm(tools=["file_read"], permissions=rules))
    read = tool_use("in", "file_read", path="notes.txt")
    door.sim.script(reply(read), Reply.text("done"))
    async with raw_editor(door) as editor:
        editor.on_request = lambda request: {"error": error}
        session_id = await editor.start(door)
        answer = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("read")]}
        )
    asked = [m for m in editor.received if m.get("method") == "session/request_permission"]
    assert len(asked) == 1
    assert asked[0]["params"]["sessionId"] == session_id
    assert answer["result"]["stopReason"] == "end_turn"
    tool_results = [
        block
        for block in door.sim.requests[1].body["messages"][-1]["content"]
        if block["type"] == "tool_result"
    ]
    assert tool_results[0]["is_error"] is True
    assert "the notes" not in json.dumps(tool_results)


async def test_cancel_ends_the_running_turn_and_the_one_queued_behind_it(door: Door) -> None:
    """Two prompts sent at once run one after another; session/cancel ends
    both, the running one included, and the session then takes a switch."""
    door.write_agents(door.llm(name="other"), first=door.llm(models=["model-two"]))
    slow = "".join(f"word{index} " for index in range(40))
    door.sim.script(*(Reply.text(slow, chunk_size=5, event_delay_s=0.25) for _ in range(2)))
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        running = editor.send("session/prompt", {"sessionId": session_id, "prompt": [text("a")]})
        queued = editor.send("session/prompt", {"sessionId": session_id, "prompt": [text("b")]})
        while not editor.replies_of(session_id):  # the first turn has started streaming
            await editor.read()
        editor.send("session/cancel", {"sessionId": session_id}, notify=True)
        answers = [await editor.answer(running), await editor.answer(queued)]
        assert [answer["result"]["stopReason"] for answer in answers] == ["cancelled"] * 2
        streamed = "".join(
            u["content"]["text"] for u in editor.updates_of(session_id) if "content" in u
        )
        assert slow.startswith(streamed) and streamed != slow
        switched = await editor.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": "model", "value": "model-two"},
        )
        assert "result" in switched, switched
    assert len(door.sim.requests) == 1  # the queued turn never reached the provider


async def test_a_running_turn_refuses_a_switch_and_a_load_of_its_session(door: Door) -> None:
    door.write_agents(first=door.llm(models=["model-two"]))
    door.sim.script(Reply.text("one two three four five six", chunk_size=4, event_delay_s=0.3))
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        turn = editor.send("session/prompt", {"sessionId": session_id, "prompt": [text("go")]})
        while not editor.replies_of(session_id):
            await editor.read()
        switch = await editor.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": "model", "value": "model-two"},
        )
        load = await editor.call(
            "session/load", {"sessionId": session_id, "cwd": str(door.cwd), "mcpServers": []}
        )
        for refused in (switch, load):
            assert refused["error"]["code"] == -32602, refused
            assert "a turn is running" in json.dumps(refused["error"])
        answer = await editor.answer(turn)
        assert answer["result"]["stopReason"] == "end_turn"
        loaded = await editor.call(
            "session/load", {"sessionId": session_id, "cwd": str(door.cwd), "mcpServers": []}
        )
        assert "result" in loaded, loaded


FAULTS_SERVER = Path(__file__).resolve().parents[1] / "llm" / "mcp_servers" / "faults.py"


async def test_an_idle_sessions_mcp_server_is_ended_and_its_next_turn_starts_it(
    door: Door,
) -> None:
    """No session/close comes: after --session-idle-timeout the agent rests,
    its MCP server ends, and the next turn starts a new one on the history."""
    faults = {"name": "faults", "command": sys.executable, "args": [str(FAULTS_SERVER)]}
    allow = [{"tool": "*__*", "action": "allow"}]
    door.write_agents(first=door.llm(mcpServers=[faults], permissions=allow))
    door.flags = ["--session-idle-timeout", "1"]
    echo = tool_use("e", "faults__echo", text="x")
    door.sim.script(reply(echo), Reply.text("one"), reply(echo), Reply.text("two"))

    def server_pid(request_index: int) -> int:
        (result,) = door.sim.requests[request_index].body["messages"][-1]["content"]
        return int(str(result["content"]).rsplit("pid ", 1)[1].split(")")[0])

    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        first = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("a")]}
        )
        assert first["result"]["stopReason"] == "end_turn", first
        pid = server_pid(1)
        assert await wait_dead_async(pid, timeout=20), "the idle session's MCP server lives on"
        second = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("b")]}
        )
        assert second["result"]["stopReason"] == "end_turn", second
        assert server_pid(3) != pid
    # The second turn carried the first: the history stayed while the agent rested.
    texts = [json.dumps(message) for message in door.sim.requests[2].body["messages"]]
    assert any('"one"' in entry for entry in texts)
