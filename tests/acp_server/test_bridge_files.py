"""An ACP agent behind the ACP door (the TypeScript SDK's scripted agent,
wrapped) reading and writing files through oma-host: its
``fs/read_text_file`` answered from the editor's buffer, confined to cwd, and
its ``fs/write_text_file`` (with ``allowWrites``) carried to the editor."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.acp_server.helpers import (
    Door,
    acp_agent,
    initialize,
    new_session,
    prompt,
    reply_text,
    text,
)


def _asked(turn: dict[str, Any], what: str) -> list[dict[str, Any]]:
    return [update[what] for update in turn["updates"] if what in update]


def test_the_inner_agent_reads_the_editors_buffer_inside_cwd_only(
    door: Door, tmp_path: Path
) -> None:
    (door.cwd / "notes.txt").write_text("disk text")
    (tmp_path / "secret.txt").write_text("disk secret")
    notes = f"{os.path.realpath(door.cwd)}/notes.txt"
    secret = os.path.realpath(tmp_path / "secret.txt")
    door.write_agents(first=acp_agent(cwd=str(door.cwd)))
    _, _, inside, outside = door.run(
        initialize(fs={"readTextFile": True}),
        new_session(door.cwd),
        prompt(text(f"[read:{notes}]")),
        prompt(text(f"[read:{secret}]")),
        files={notes: "buffer text, unsaved", secret: "the editor's secret"},
    )
    assert reply_text(inside["updates"]) == "read: buffer text, unsaved"
    assert reply_text(outside["updates"]) == "read: error -32602"
    # Only the path inside cwd went to the editor.
    assert [r["path"] for r in _asked(inside, "readTextFile")] == [notes]
    assert not _asked(outside, "readTextFile")


def test_the_inner_agents_write_goes_to_the_editor_when_allowed(door: Door) -> None:
    (door.cwd / "notes.txt").write_text("disk text")
    notes = f"{os.path.realpath(door.cwd)}/notes.txt"
    agent = acp_agent(cwd=str(door.cwd), allowWrites=True)
    agent["permissions"] = [{"tool": "file_write", "action": "allow"}]
    door.write_agents(first=agent)
    _, _, turn = door.run(
        initialize(fs={"readTextFile": True, "writeTextFile": True}),
        new_session(door.cwd),
        prompt(text(f"[write:{notes}=from the agent]")),
    )
    assert reply_text(turn["updates"]) == "write: ok"
    (written,) = _asked(turn, "writeTextFile")
    assert written["path"] == notes and written["content"] == "from the agent"
    assert (door.cwd / "notes.txt").read_text() == "disk text"  # the editor's to save
