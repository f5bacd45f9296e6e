"""ACP ``additionalDirectories`` through the real ``oma-host acp``, driven by
the official TypeScript SDK's client: advertised, checked like ``cwd``, the
built-in tools reaching the folders (a read, grep and glob there; a file
outside every folder and a symlink out of one refused; a write there asked
about as in ``cwd``), the environment prompt naming them, and the list kept
with the session for a ``session/load`` in a new process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, prompt, step, text


def _call(call_id: str, name: str, **arguments: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _results(door: Door, request: int = -1) -> dict[str, tuple[str, bool]]:
    """The tool results the model got in a request: (text, is_error) by call id."""
    found = {}
    for block in door.sim.requests[request].body["messages"][-1]["content"]:
        if block.get("type") != "tool_result":
            continue
        content = block["content"]
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        found[block["tool_use_id"]] = (content, bool(block.get("is_error")))
    return found


def _folders(door: Door) -> Path:
    """extra/ (an additional directory) with notes.txt, a symlink out of it
    and a git folder; secret.txt outside every folder."""
    (door.tmp / "secret.txt").write_text("OUTSIDE")
    extra = door.tmp / "extra"
    extra.mkdir()
    (extra / "notes.txt").write_text("needle in the extra folder\n")
    (extra / "out").symlink_to(door.tmp / "secret.txt")
    return extra.resolve()


def _new(door: Door, *directories: str) -> dict[str, Any]:
    return step(
        "session/new", cwd=str(door.cwd), mcpServers=[], additionalDirectories=list(directories)
    )


def test_the_tools_reach_an_additional_directory_and_nothing_outside(door: Door) -> None:
    extra = _folders(door)
    notes, secret = str(extra / "notes.txt"), str(door.tmp / "secret.txt")
    door.sim.script(
        Reply(
            content=[
                _call("read", "file_read", path=notes),
                _call("grep", "grep", pattern="needle", path=str(extra)),
                _call("glob", "glob", pattern=f"{extra}/*.txt"),
                _call("outside", "file_read", path=secret),
                _call("link", "file_read", path=str(extra / "out")),
            ]
        ),
        Reply.text("read"),
        Reply(content=[_call("write", "file_write", path=str(extra / "new.txt"), content="new")]),
        Reply.text("written"),
    )
    init, new, read, write = door.run(
        initialize(),
        _new(door, str(extra)),
        prompt(text("look in the extra folder")),
        prompt(text("write there")),
        permission="allow_once",
    )
    capabilities = init["result"]["agentCapabilities"]["sessionCapabilities"]
    assert capabilities["additionalDirectories"] == {}
    assert "error" not in new, new
    assert read["result"]["stopReason"] == "end_turn"
    results = _results(door, 1)
    assert results["read"] == ("needle in the extra folder\n", False)
    assert results["grep"] == (f"{notes}:1: needle in the extra folder", False)
    assert results["glob"] == (notes, False)
    for refused in ("outside", "link"):
        said, is_error = results[refused]
        assert is_error and "is outside the agent's working directory and its additional" in said
        assert "OUTSIDE" not in said
    # The environment prompt tells the model the folder.
    system = json.dumps(door.sim.requests[0].body["system"])
    assert "Additional directories (the tools reach them too" in system and str(extra) in system

    # A write there asks, as one in cwd does, and lands there once allowed.
    (asked,) = [u["permissionRequest"] for u in write["updates"] if "permissionRequest" in u]
    assert asked["toolCall"]["kind"] == "edit"
    assert write["result"]["stopReason"] == "end_turn"
    assert _results(door)["write"][1] is False
    assert (extra / "new.txt").read_text() == "new"


def test_the_directories_are_kept_for_load_and_a_request_list_replaces_them(door: Door) -> None:
    extra = _folders(door)
    other = door.tmp / "other"
    other.mkdir()
    notes = str(extra / "notes.txt")
    door.sim.script(Reply.text("first"))
    _, new, _ = door.run(initialize(), _new(door, str(extra)), prompt(text("hi")))
    session = new["result"]["sessionId"]

    # A new process: load without the list restores it; session/list shows it.
    door.sim.script(Reply(content=[_call("again", "file_read", path=notes)]), Reply.text("ok"))
    _, loaded, _, listed, resumed, listed_again = door.run(
        initialize(),
        step("session/load", sessionId=session, cwd=str(door.cwd), mcpServers=[]),
        prompt(text("read it again"), session=session),
        step("session/list", cwd=str(door.cwd)),
        # The request's own list replaces the stored one.
        step(
            "session/resume",
            sessionId=session,
            cwd=str(door.cwd),
            mcpServers=[],
            additionalDirectories=[str(other)],
        ),
        step("session/list", cwd=str(door.cwd)),
    )
    assert "error" not in loaded, loaded
    assert _results(door)["again"] == ("needle in the extra folder\n", False)
    (info,) = listed["result"]["sessions"]
    assert info["additionalDirectories"] == [str(extra)]
    assert "error" not in resumed, resumed
    (info,) = listed_again["result"]["sessions"]
    assert info["additionalDirectories"] == [str(other)]


def test_a_relative_or_missing_directory_is_refused_naming_it(door: Door) -> None:
    _, relative, missing = door.run(
        initialize(),
        _new(door, str(door.tmp), "relative/dir"),
        _new(door, str(door.tmp / "gone")),
    )
    assert relative["error"]["code"] == -32602
    assert "additionalDirectories[1] must be an absolute path" in relative["error"]["message"]
    assert missing["error"]["code"] == -32602
    assert "additionalDirectories[0]" in missing["error"]["message"]
    assert "is not a directory" in missing["error"]["message"]
