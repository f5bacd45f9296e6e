"""``file_write`` and ``file_edit`` behind the ACP door, driven by the
TypeScript SDK's client: through ``fs/write_text_file`` when the editor
advertised it (the whole new text, planned from the editor's buffer; the
disk untouched), to disk otherwise; an editor's refusal reaching the model
and the user with the reason it gave (acpx's own refusal too); each call
shown to the editor as an
``edit`` of its file, located only when it stays inside ``cwd``; and the
editor's "always allow" for a tool that asks lasting the session."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, text
from tests.builders import reply, tool_use

ALLOW_WRITES = [{"tool": "file_*", "action": "allow"}]
WRITE_AND_READ = {"readTextFile": True, "writeTextFile": True}


def _results(door: Door, request: int = 1) -> dict[str, dict[str, Any]]:
    content = door.sim.requests[request].body["messages"][-1]["content"]
    return {block["tool_use_id"]: block for block in content if block["type"] == "tool_result"}


def _asked(turn: dict[str, Any], what: str) -> list[dict[str, Any]]:
    return [update[what] for update in turn["updates"] if what in update]


def _setup(door: Door, *calls: dict[str, Any], **fields: Any) -> str:
    """notes.txt on disk; an agent whose model makes ``calls``, then says done.
    The notes' absolute path as the editor knows it."""
    (door.cwd / "notes.txt").write_text("one\ntwo\nthree\n")
    tools = ["file_read", "file_write", "file_edit"]
    door.write_agents(first=door.llm(tools=tools, permissions=ALLOW_WRITES, **fields))
    door.sim.script(Reply(content=list(calls)), Reply.text("done"))
    return f"{os.path.realpath(door.cwd)}/notes.txt"


def test_file_edit_goes_to_the_editor_planned_from_its_buffer(door: Door) -> None:
    notes = _setup(door, tool_use("e", "file_edit", path="notes.txt", old="TWO", new="2"))
    _, new, turn = door.run(
        initialize(fs=WRITE_AND_READ),
        new_session(door.cwd),
        prompt(text("edit")),
        files={notes: "one\nTWO (unsaved)\nthree\n"},
    )
    assert turn["result"]["stopReason"] == "end_turn"
    result = _results(door)["e"]
    assert not result.get("is_error"), result
    assert "written by the editor" in result["content"]
    (written,) = _asked(turn, "writeTextFile")
    # The request names the run's span it was made in (docs/acp.md, "Trace context").
    assert written.pop("_meta")["traceparent"].startswith("00-")
    assert written == {
        "sessionId": new["result"]["sessionId"],
        "path": notes,
        "content": "one\n2 (unsaved)\nthree\n",
    }
    assert (door.cwd / "notes.txt").read_text() == "one\ntwo\nthree\n"  # the disk is the editor's


def test_file_write_of_a_new_file_goes_to_the_editor_and_not_the_disk(door: Door) -> None:
    _setup(door, tool_use("w", "file_write", path="src/new.txt", content="fresh\n"))
    _, _, turn = door.run(
        initialize(fs={"writeTextFile": True}), new_session(door.cwd), prompt(text("write"))
    )
    assert not _results(door)["w"].get("is_error")
    (written,) = _asked(turn, "writeTextFile")
    assert written["path"] == f"{os.path.realpath(door.cwd)}/src/new.txt"
    assert written["content"] == "fresh\n"
    assert not (door.cwd / "src").exists()


def test_an_editor_that_refuses_the_write_is_an_error_result(door: Door) -> None:
    _setup(door, tool_use("w", "file_write", path="notes.txt", content="gone"))
    _, _, turn = door.run(
        initialize(fs={"writeTextFile": True}),
        new_session(door.cwd),
        prompt(text("write")),
        refuse_writes=True,
    )
    assert turn["result"]["stopReason"] == "end_turn"
    result = _results(door)["w"]
    assert result["is_error"] is True
    assert result["content"] == (
        f"file_write: the editor could not write {os.path.realpath(door.cwd)}/notes.txt: "
        "Internal error: read-only buffer (-32603)"
    )
    assert (door.cwd / "notes.txt").read_text() == "one\ntwo\nthree\n"


def test_an_editor_s_reason_in_its_error_data_reaches_the_model_and_the_user_redacted(
    door: Door,
) -> None:
    secret = door.env["ANTHROPIC_API_KEY"]
    _setup(door, tool_use("w", "file_write", path="notes.txt", content="gone"))
    refusal = {"details": f"Permission denied: the buffer is locked ({secret})"}
    _, _, turn = door.run(
        initialize(fs={"writeTextFile": True}),
        new_session(door.cwd),
        prompt(text("write")),
        refuse_writes=refusal,
    )
    content = _results(door)["w"]["content"]
    assert "Internal error (-32603): Permission denied: the buffer is locked" in content
    ended = [u for u in turn["updates"] if u.get("toolCallId") == "w" and "status" in u]
    shown = json.dumps(ended[-1])
    assert ended[-1]["status"] == "failed"
    assert "Permission denied: the buffer is locked ([redacted])" in shown
    assert secret not in json.dumps(turn["updates"])


def test_acpx_refusing_the_write_gives_its_reason_to_the_model_and_the_user(door: Door) -> None:
    """acpx answers a write it does not approve with "Internal error" and the
    reason in ``data.details``: the reason reaches the tool result."""
    _setup(door, tool_use("w", "file_write", path="notes.txt", content="gone"))
    done = door.acpx("--deny-all", "--format", "json", "exec", "write the notes")
    assert done.returncode == 5, done.stderr  # acpx's PERMISSION_DENIED: it refused one
    result = _results(door)["w"]
    assert result["is_error"] is True
    reason = "Permission denied for fs/write_text_file"
    assert result["content"] == (
        f"file_write: the editor could not write {os.path.realpath(door.cwd)}/notes.txt: "
        f"Internal error (-32603): {reason}"
    )
    assert (door.cwd / "notes.txt").read_text() == "one\ntwo\nthree\n"
    # The user sees it too, in the tool call's last update.
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    (ended,) = [u for u in updates if u.get("toolCallId") == "w" and u.get("status") == "failed"]
    assert reason in json.dumps(ended["content"])
    answers = [m["result"] for m in messages if "stopReason" in m.get("result", {})]
    assert [answer["stopReason"] for answer in answers] == ["end_turn"]


def test_a_path_outside_cwd_is_refused_before_the_editor_is_asked(
    door: Door, tmp_path: Path
) -> None:
    (tmp_path / "outside.txt").write_text("keep")
    _setup(door, tool_use("w", "file_write", path="../outside.txt", content="x"))
    _, _, turn = door.run(
        initialize(fs=WRITE_AND_READ), new_session(door.cwd), prompt(text("write"))
    )
    result = _results(door)["w"]
    assert result["is_error"] is True
    assert "outside the agent's working directory" in result["content"]
    assert not _asked(turn, "writeTextFile")
    assert (tmp_path / "outside.txt").read_text() == "keep"


def test_a_write_reaches_the_editor_as_an_edit_located_only_inside_cwd(
    door: Door, tmp_path: Path
) -> None:
    _setup(
        door,
        tool_use("in", "file_write", path="src/new.txt", content="x"),
        tool_use("up", "file_write", path="src/../../outside.txt", content="x"),
        tool_use("abs", "file_write", path=str(tmp_path / "outside.txt"), content="x"),
    )
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("write")))
    started = {
        update["toolCallId"]: update
        for update in turn["updates"]
        if update.get("sessionUpdate") == "tool_call"
    }
    assert {call: update["kind"] for call, update in started.items()} == {
        "in": "edit",
        "up": "edit",
        "abs": "edit",
    }
    assert started["in"]["locations"] == [{"path": str(door.cwd / "src" / "new.txt")}]
    assert "locations" not in started["up"]
    assert "locations" not in started["abs"]


def test_without_the_capability_the_host_writes_the_disk(door: Door) -> None:
    _setup(door, tool_use("e", "file_edit", path="notes.txt", old="two", new="2"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("edit")))
    assert not _results(door)["e"].get("is_error")
    assert not _asked(turn, "writeTextFile")
    assert (door.cwd / "notes.txt").read_text() == "one\n2\nthree\n"


def test_an_editor_that_reads_but_cannot_write_has_the_edit_planned_from_its_buffer(
    door: Door,
) -> None:
    notes = _setup(door, tool_use("e", "file_edit", path="notes.txt", old="TWO", new="2"))
    door.run(
        initialize(fs={"readTextFile": True}),
        new_session(door.cwd),
        prompt(text("edit")),
        files={notes: "one\nTWO\nthree\n"},
    )
    assert not _results(door)["e"].get("is_error")
    assert (door.cwd / "notes.txt").read_text() == "one\n2\nthree\n"


def test_always_allow_in_the_editor_lasts_the_session(door: Door) -> None:
    (door.cwd / "notes.txt").write_text("the notes")
    rules = [{"tool": "file_read", "action": "ask"}]
    door.write_agents(first=door.llm(tools=["file_read"], permissions=rules))
    read = tool_use("r", "file_read", path="notes.txt")
    door.sim.script(reply(read), Reply.text("one"), reply(read), Reply.text("two"))
    _, _, first, second = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("read")),
        prompt(text("read again")),
        permission="allow_always",
    )
    assert len(_asked(first, "permissionRequest")) == 1
    assert _asked(second, "permissionRequest") == []  # the session grant answered
    assert _results(door, 1)["r"]["content"] == "the notes"
    assert _results(door, 3)["r"]["content"] == "the notes"


def test_writes_are_shown_as_diffs_and_reviewed_before_they_land(door: Door) -> None:
    """file_edit and file_write reach the editor as ``diff`` content: in the
    tool call, in the permission request the editor answers before anything
    is written (the same tool call id), and still in the call's last update."""
    (door.cwd / "notes.txt").write_text("one\ntwo\nthree\n")
    door.write_agents(first=door.llm(tools=["file_read", "file_write", "file_edit"]))
    door.sim.script(
        reply(
            tool_use("e", "file_edit", path="notes.txt", old="two", new="2"),
            tool_use("w", "file_write", path="src/new.txt", content="fresh\n"),
        ),
        Reply.text("done"),
    )
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("edit")), permission="allow_once"
    )
    cwd = os.path.normpath(door.cwd)
    expected = {
        "e": {"type": "diff", "path": f"{cwd}/notes.txt", "oldText": "two", "newText": "2"},
        # A whole file's text: no oldText (ACP's form for a new file).
        "w": {"type": "diff", "path": f"{cwd}/src/new.txt", "newText": "fresh\n"},
    }
    updates = turn["updates"]
    started = {u["toolCallId"]: u for u in updates if u.get("sessionUpdate") == "tool_call"}
    asked = {r["toolCall"]["toolCallId"]: r["toolCall"] for r in _asked(turn, "permissionRequest")}
    finished = {u["toolCallId"]: u for u in updates if u.get("sessionUpdate") == "tool_call_update"}
    for call, diff in expected.items():
        assert started[call]["content"] == [diff]
        assert asked[call]["content"] == [diff]
        assert asked[call]["locations"] == [{"path": diff["path"]}]
        assert asked[call]["kind"] == "edit"
        assert finished[call]["status"] == "completed"
        assert finished[call]["content"][0] == diff  # then the tool's output
    # Each was asked before it ran: the permission request came before the result.
    order = [
        u.get("toolCallId") or u["permissionRequest"]["toolCall"]["toolCallId"]
        for u in updates
        if "permissionRequest" in u or u.get("sessionUpdate") == "tool_call_update"
    ]
    assert order == ["e", "e", "w", "w"]
    assert (door.cwd / "notes.txt").read_text() == "one\n2\nthree\n"


def test_always_allow_covers_the_file_approved_and_never_git(door: Door) -> None:
    """The editor answers every request "always allow": the grant covers
    docs/notes.md alone (another file is asked), and a git hook is asked
    for with no "always" option, so this editor's answer rejects it."""
    door.write_agents(first=door.llm(tools=["file_write"]))
    door.sim.script(
        reply(
            tool_use("w1", "file_write", path="docs/notes.md", content="one\n"),
            tool_use("w2", "file_write", path="docs/notes.md", content="two\n"),
            tool_use("w3", "file_write", path="docs/other.md", content="other\n"),
            tool_use("w4", "file_write", path=".git/hooks/pre-commit", content="curl evil\n"),
        ),
        Reply.text("done"),
    )
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("write")), permission="allow_always"
    )
    asked = _asked(turn, "permissionRequest")
    assert [request["toolCall"]["toolCallId"] for request in asked] == ["w1", "w3", "w4"]
    assert [option["name"] for option in asked[0]["options"]] == [
        "Allow once",
        "Always allow this path",
        "Reject",
    ]
    assert [option["kind"] for option in asked[2]["options"]] == ["allow_once", "reject_once"]
    assert (door.cwd / "docs" / "notes.md").read_text() == "two\n"
    assert (door.cwd / "docs" / "other.md").read_text() == "other\n"
    assert _results(door)["w4"]["is_error"] is True
    assert not (door.cwd / ".git").exists()


def test_accept_edits_still_asks_for_the_agents_file_and_the_commands(door: Door) -> None:
    """In accept-edits mode a write is not asked for, except to the agents
    file the door serves and to the repository's .oma folder."""
    door.agents_file = door.cwd / "agents.json"
    door.write_agents(first=door.llm(tools=["file_write"], permissionMode="accept-edits"))
    served = door.agents_file.read_text()
    door.sim.script(
        reply(
            tool_use("ok", "file_write", path="src/a.txt", content="a\n"),
            tool_use("agents", "file_write", path="agents.json", content="[]"),
            tool_use("cmd", "file_write", path=".oma/commands/review.md", content="steal\n"),
        ),
        Reply.text("done"),
    )
    _, _, turn = door.run(
        initialize(), new_session(door.cwd), prompt(text("write")), permission="allow_always"
    )
    asked = _asked(turn, "permissionRequest")
    assert [request["toolCall"]["toolCallId"] for request in asked] == ["agents", "cmd"]
    assert (door.cwd / "src" / "a.txt").read_text() == "a\n"
    assert door.agents_file.read_text() == served
    assert not (door.cwd / ".oma").exists()
