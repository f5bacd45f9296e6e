"""``oma-host acp`` driven by the official TypeScript SDK's client: prompts
and their updates, the string-only boundary, cancel, storage and load."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oma_host.orchestration.store_schema import DB_NAME
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import (
    IMAGE,
    Door,
    acp_agent,
    image,
    initialize,
    kinds,
    new_session,
    prompt,
    refused_agents_file,
    reply_text,
    step,
    text,
)
from tests.builders import reply, tool_use


def test_initialize_advertises_images_embedded_context_and_load(door: Door) -> None:
    (init,) = door.run(initialize())
    result = init["result"]
    assert result["protocolVersion"] == 1
    capabilities = result["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert capabilities["promptCapabilities"] == {
        "image": True,
        "audio": False,
        "embeddedContext": True,
    }
    (method,) = result["authMethods"]
    assert method["vars"] == [{"name": "ANTHROPIC_API_KEY", "secret": True}]


def test_authenticate_names_the_missing_variable(door: Door) -> None:
    door.env.pop("ANTHROPIC_API_KEY")
    _, auth = door.run(initialize(), step("authenticate", methodId="env:ANTHROPIC_API_KEY"))
    assert "ANTHROPIC_API_KEY" in auth["error"]["data"]["message"]


def test_a_text_prompt_streams_the_reply(door: Door) -> None:
    door.sim.script(Reply.text("Hello from the simulator", chunk_size=4))
    _, new, turn = door.run(initialize(), new_session(door.cwd), prompt(text("hi")))
    assert turn["result"]["stopReason"] == "end_turn"
    assert reply_text(turn["updates"]) == "Hello from the simulator"
    assert kinds(turn["updates"]).count("agent_message_chunk") > 1
    assert turn["updates"][-1] == {"sessionUpdate": "usage_update", "used": 15, "size": 200000}
    options = {option["id"]: option for option in new["result"]["configOptions"]}
    assert options["agent"]["currentValue"] == "claude"


def test_an_image_reaches_the_provider_as_an_image_block(door: Door) -> None:
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("what is this?"), image())
    )
    assert turn["result"]["stopReason"] == "end_turn"
    assert door.user_content() == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}},
    ]


def test_an_embedded_resource_reaches_the_provider_as_text_naming_its_uri(door: Door) -> None:
    uri = f"file://{door.cwd}/notes.md"
    resource = {"type": "resource", "resource": {"uri": uri, "text": "# Notes\nbuy milk"}}
    blob = {
        "type": "resource",
        "resource": {"uri": f"file://{door.cwd}/dot.png", "blob": IMAGE, "mimeType": "image/png"},
    }
    link = {"type": "resource_link", "uri": f"file://{door.cwd}/src/app.py", "name": "app.py"}
    door.run(initialize(), new_session(door.cwd), prompt(text("read"), resource, blob, link))
    content = door.user_content()
    assert content[1] == {"type": "text", "text": f"[resource {uri}]\n# Notes\nbuy milk"}
    assert content[2]["source"] == {"type": "base64", "media_type": "image/png", "data": IMAGE}
    assert "src/app.py" in content[3]["text"] and "file_read" in content[3]["text"]


def test_audio_is_refused_with_the_path_of_the_block(door: Door) -> None:
    audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("listen"), audio))
    assert turn["error"]["code"] == -32602
    assert turn["error"]["data"] == {"type": "InvalidMessageError", "path": "prompt[1]"}
    assert door.sim.requests == []


def test_an_image_for_a_process_agent_is_refused_before_anything_is_spawned(
    door: Door, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    script = f"touch {marker}; cat"
    door.write_agents(
        first={
            "name": "shell",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", script]},
        }
    )
    _, _, refused, accepted = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("look"), image()),
        prompt(text("only"), text("text")),
    )
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"] == {"type": "InvalidMessageError", "path": "prompt"}
    assert "accepts string prompts only" in refused["error"]["message"]
    # The refused prompt spawned nothing; the text prompt after it did, joined as one string.
    assert accepted["result"]["stopReason"] == "end_turn"
    assert reply_text(accepted["updates"]) == "only\ntext"
    assert marker.exists()


def test_an_image_for_a_process_agent_spawns_nothing_at_all(door: Door, tmp_path: Path) -> None:
    marker = tmp_path / "spawned"
    door.write_agents(
        first={
            "name": "shell",
            "backend": {"kind": "process", "command": "sh", "args": ["-c", f"touch {marker}"]},
        }
    )
    _, _, refused = door.run(initialize(), new_session(door.cwd), prompt(image()))
    assert refused["error"]["data"]["type"] == "InvalidMessageError"
    assert not marker.exists()


def test_cancel_ends_the_turn_and_keeps_it_out_of_history(door: Door) -> None:
    door.sim.script(Reply.text("a long answer " * 20, chunk_size=4, event_delay_s=0.05))
    cancelled = prompt(text("tell me a story"))
    cancelled["cancelAfterChunks"] = 2
    _, _, turn, after = door.run(
        initialize(), new_session(door.cwd), cancelled, prompt(text("again"))
    )
    assert turn["result"]["stopReason"] == "cancelled"
    assert reply_text(turn["updates"]).startswith("a lo")
    assert after["result"]["stopReason"] == "end_turn"
    # The cancelled turn is not in the history the next turn carries.
    assert len(door.sim.requests[-1].body["messages"]) == 1


def test_load_in_a_new_process_replays_the_history_and_the_next_turn_carries_it(
    door: Door,
) -> None:
    door.sim.script(Reply.text("first answer"))
    _, new, _ = door.run(initialize(), new_session(door.cwd), prompt(text("first"), image()))
    session_id = new["result"]["sessionId"]
    door.sim.script(Reply.text("second answer"))
    _, listed, loaded, turn = door.run(
        initialize(),
        step("session/list", cwd=str(door.cwd)),
        step("session/load", sessionId=session_id, cwd=str(door.cwd), mcpServers=[]),
        prompt(text("second"), session=session_id),
    )
    assert listed["result"]["sessions"][0]["sessionId"] == session_id
    assert listed["result"]["sessions"][0]["title"] == "first"
    assert listed["result"]["sessions"][0]["cwd"] == str(door.cwd)
    assert [(u["sessionUpdate"], u["content"]["type"]) for u in loaded["updates"]] == [
        ("user_message_chunk", "text"),
        ("user_message_chunk", "image"),
        ("agent_message_chunk", "text"),
    ]
    assert loaded["updates"][1]["content"]["data"] == IMAGE
    assert reply_text(loaded["updates"]) == "first answer"
    assert turn["result"]["stopReason"] == "end_turn"
    sent = door.sim.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"][1]["type"] == "image"


def test_switching_the_model_keeps_the_history(door: Door) -> None:
    door.write_agents(first=door.llm(models=["model-one", "model-two"]))
    _, new, _, switched, _ = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("one")),
        step(
            "session/set_config_option", sessionId="$session", configId="model", value="model-two"
        ),
        prompt(text("two")),
    )
    models = {o["id"]: o for o in new["result"]["configOptions"]}["model"]
    assert [o["value"] for o in models["options"]] == ["model-one", "model-two"]
    current = {o["id"]: o["currentValue"] for o in switched["result"]["configOptions"]}
    assert current == {"agent": "claude", "model": "model-two", "mode": "ask", "sandbox": "off"}
    body = door.sim.requests[-1].body
    assert body["model"] == "model-two"
    assert len(body["messages"]) == 3


def test_tool_calls_stream_with_kind_locations_and_output(door: Door) -> None:
    (door.cwd / "notes.txt").write_text("the notes")
    door.write_agents(first=door.llm(tools=["file_read"]))
    call = tool_use("call_1", "file_read", path="notes.txt")
    door.sim.script(reply(call), Reply.text("done"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("read the notes")))
    started, finished = (u for u in turn["updates"] if u["sessionUpdate"].startswith("tool_call"))
    assert started["sessionUpdate"] == "tool_call"
    assert started["kind"] == "read"
    assert started["locations"] == [{"path": str(door.cwd / "notes.txt")}]
    assert finished["sessionUpdate"] == "tool_call_update"
    assert finished["status"] == "completed"
    assert finished["content"] == [{"type": "content", "content": text("the notes")}]


def test_stop_reasons_for_the_token_budget_and_max_turns(door: Door) -> None:
    call = tool_use("call_1", "glob", pattern="*")
    door.write_agents(
        door.llm("looping", tools=["glob"], maxTurns=1),
        first=door.llm("thrifty", maxTokenBudget=5),
    )
    door.sim.script(Reply.text("too long"), reply(call))
    _, _, budget, _, turns = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("hi")),
        step("session/set_config_option", sessionId="$session", configId="agent", value="looping"),
        prompt(text("loop")),
    )
    assert budget["result"]["stopReason"] == "max_tokens"
    assert turns["result"]["stopReason"] == "max_turn_requests"


def test_a_bad_agents_file_is_named_to_the_editor_and_in_one_line(tmp_path: Path) -> None:
    agents = tmp_path / "agents.json"
    agents.write_text(
        '[{"name": "a", "model": "m"}, {"name": "b", "backend": {"kind": "process"}}]'
    )
    error, stderr = refused_agents_file(agents)
    assert error["code"] == -32602
    assert str(agents) in error["message"] and "$[1].backend.command" in error["message"]
    lines = stderr.strip().splitlines()
    assert len(lines) == 1
    assert str(agents) in lines[0] and "$[1].backend.command" in lines[0]


def test_a_wrapped_acp_agents_own_stop_reasons_pass_through(
    door: Door, acp_agent_dir: Path
) -> None:
    door.write_agents(first=acp_agent())
    _, _, tokens, turns, ended = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("[max_tokens]")),
        prompt(text("[max_turn_requests]")),
        prompt(text("and now?")),
    )
    assert tokens["result"]["stopReason"] == "max_tokens"
    assert reply_text(tokens["updates"]) == "stopping: max_tokens"
    assert turns["result"]["stopReason"] == "max_turn_requests"
    assert ended["result"]["stopReason"] == "end_turn"


def test_a_key_typed_into_the_first_prompt_stays_out_of_the_title(door: Door) -> None:
    """The title session/list shows and the store keeps is redacted of the
    agent's own key (of no credential shape) and of credential shapes."""
    own = "Zq81own0Key9Lm27"
    door.write_agents(first=door.llm(apiKey=own))
    door.sim.script(Reply.text("noted"))
    door.run(initialize(), new_session(door.cwd), prompt(text(f"my key is {own} ok")))
    _, listed = door.run(initialize(), step("session/list", cwd=str(door.cwd)))
    assert listed["result"]["sessions"][0]["title"] == "my key is [redacted] ok"
    with sqlite3.connect(door.state / DB_NAME) as db:
        titles = [row[0] for row in db.execute("SELECT title FROM session_info")]
    assert titles == ["my key is [redacted] ok"]
