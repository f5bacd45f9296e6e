"""What the ACP door asks of the editor, driven by the TypeScript SDK's
client: ``file_read`` through ``fs/read_text_file`` (the editor's buffer over
the disk, still confined to ``cwd``), and a wrapped ACP agent's permission
requests passed to the editor with the inner agent's own options."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import (
    Door,
    acp_agent,
    initialize,
    new_session,
    prompt,
    reply_text,
    text,
)
from tests.builders import reply, tool_use


def _tool_results(door: Door) -> dict[str, dict[str, Any]]:
    """The tool results the model was sent in the second request, by call id."""
    content = door.sim.requests[1].body["messages"][-1]["content"]
    return {block["tool_use_id"]: block for block in content if block["type"] == "tool_result"}


def _read(call_id: str, path: str) -> dict[str, Any]:
    return tool_use(call_id, "file_read", path=path)


def _files_setup(door: Door, tmp_path: Path) -> tuple[str, str]:
    """notes.txt in the project, secret.txt beside it (outside cwd); their
    absolute paths as the editor knows them."""
    (door.cwd / "notes.txt").write_text("disk text")
    (tmp_path / "secret.txt").write_text("disk secret")
    door.write_agents(first=door.llm(tools=["file_read"]))
    door.sim.script(
        reply(_read("in", "notes.txt"), _read("out", "../secret.txt")),
        Reply.text("done"),
    )
    project = os.path.realpath(door.cwd)
    return f"{project}/notes.txt", os.path.realpath(tmp_path / "secret.txt")


def test_file_read_reads_the_editors_buffer_when_the_client_can(door: Door, tmp_path: Path) -> None:
    notes, secret = _files_setup(door, tmp_path)
    _, new, turn = door.run(
        initialize(fs={"readTextFile": True}),
        new_session(door.cwd),
        prompt(text("read the notes")),
        files={notes: "buffer text, unsaved", secret: "the editor's secret"},
    )
    assert turn["result"]["stopReason"] == "end_turn"
    results = _tool_results(door)
    assert results["in"]["content"] == "buffer text, unsaved"
    assert not results["in"].get("is_error")
    # Outside cwd: refused by the host, and the editor was never asked.
    assert results["out"]["is_error"] is True
    assert "outside the agent's working directory" in results["out"]["content"]
    asked = [u["readTextFile"] for u in turn["updates"] if "readTextFile" in u]
    assert [request["path"] for request in asked] == [notes]
    assert asked[0]["sessionId"] == new["result"]["sessionId"]


def test_an_editor_that_cannot_read_the_file_fails_the_tool_call_not_the_turn(
    door: Door, tmp_path: Path
) -> None:
    notes, _ = _files_setup(door, tmp_path)
    _, _, turn = door.run(
        initialize(fs={"readTextFile": True}),
        new_session(door.cwd),
        prompt(text("read the notes")),
        files={},
    )
    assert turn["result"]["stopReason"] == "end_turn"
    result = _tool_results(door)["in"]
    assert result["is_error"] is True
    assert f"the editor could not read {notes}" in result["content"]


def test_file_read_reads_the_disk_when_the_client_does_not_offer_files(
    door: Door, tmp_path: Path
) -> None:
    notes, secret = _files_setup(door, tmp_path)
    _, _, turn = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("read the notes")),
        files={notes: "buffer text, unsaved", secret: "the editor's secret"},
    )
    assert turn["result"]["stopReason"] == "end_turn"
    results = _tool_results(door)
    assert results["in"]["content"] == "disk text"
    assert results["out"]["is_error"] is True
    assert not [u for u in turn["updates"] if "readTextFile" in u]


# The options the scripted agent offers for "[custom-permission]", as it sends them.
CUSTOM_OPTIONS = [
    {"optionId": "ship-it", "name": "Deploy this once", "kind": "allow_once"},
    {"optionId": "ship-always", "name": "Always deploy to staging", "kind": "allow_always"},
    {"optionId": "hold-off", "name": "Not now", "kind": "reject_once"},
]
INNER_TOOL_CALL = {
    "toolCallId": "deploy-1",
    "title": "Deploy to staging",
    "kind": "execute",
    "status": "pending",
    "rawInput": {"target": "staging"},
}


def _ask(door: Door, **answer: Any) -> dict[str, Any]:
    door.write_agents(first=acp_agent(permission="ask-client"))
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("[custom-permission]")), **answer
    )
    return turn


def test_the_inner_agents_own_options_reach_the_editor_and_its_choice_goes_back(
    door: Door, acp_agent_dir: Path
) -> None:
    turn = _ask(door, permission_option_id="ship-always")
    (request,) = [u["permissionRequest"] for u in turn["updates"] if "permissionRequest" in u]
    assert request["options"] == CUSTOM_OPTIONS
    assert request["toolCall"] == INNER_TOOL_CALL
    assert turn["result"]["stopReason"] == "end_turn"
    assert reply_text(turn["updates"]) == "permission outcome: ship-always"


def test_a_rejecting_option_of_the_inner_agents_passes_back_as_chosen(
    door: Door, acp_agent_dir: Path
) -> None:
    turn = _ask(door, permission_option_id="hold-off")
    assert reply_text(turn["updates"]) == "permission outcome: hold-off"


def test_the_editor_cancelling_the_request_tells_the_inner_agent_cancelled(
    door: Door, acp_agent_dir: Path
) -> None:
    turn = _ask(door)  # the client offers no answer: it cancels
    assert [u for u in turn["updates"] if "permissionRequest" in u]
    assert reply_text(turn["updates"]) == "permission outcome: cancelled"


def _asking_read(door: Door) -> None:
    (door.cwd / "notes.txt").write_text("the notes")
    rules = [{"tool": "file_read", "action": "ask"}]
    door.write_agents(first=door.llm(tools=["file_read"], permissions=rules))
    door.sim.script(reply(_read("in", "notes.txt")), Reply.text("done"))


def test_an_llm_tool_that_asks_asks_the_editor_with_the_standard_options(door: Door) -> None:
    _asking_read(door)
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("read")), permission="allow_once"
    )
    (request,) = [u["permissionRequest"] for u in turn["updates"] if "permissionRequest" in u]
    assert [option["kind"] for option in request["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
    ]
    assert "notes.txt" in request["toolCall"]["title"]
    assert _tool_results(door)["in"]["content"] == "the notes"


def test_an_llm_tool_the_editor_rejects_is_denied(door: Door) -> None:
    _asking_read(door)
    door.run(initialize(), new_session(door.cwd), prompt(text("read")), permission="reject_once")
    result = _tool_results(door)["in"]
    assert result["is_error"] is True
    assert "permission denied" in result["content"]
