"""``file_write`` and ``file_edit`` through a real ``oma-host`` whose model is
the provider simulator: to a client that declared ``workspace.applyEdit``
they go as ``workspace/applyEdit`` (the client, here this test, writes the
file; the host does not), otherwise the host writes atomically with the mode
kept; paths outside ``cwd`` are refused either way. The write tools ask
permission by default; these agents allow them by a rule, except where the
test is about asking."""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import llm_config, results_sent
from tests.server.helpers import InProcessHost

KEY = "sk-ant-api03-edit-test-key-DO-NOT-LEAK-777"
ALLOW_WRITES = [{"tool": "file_*", "action": "allow"}]
WRITE_TOOLS = ["file_read", "file_write", "file_edit"]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


async def serve(apply_edit: bool) -> HostClient:
    """A host served in the test's process (the edits, not the process, are
    the subject), initialized as an editor that did or did not declare
    ``workspace.applyEdit``."""
    client = await InProcessHost.serve()
    capabilities: dict[str, Any] = {"workspace": {"applyEdit": True}} if apply_edit else {}
    await client.request("initialize", {"processId": os.getpid(), "capabilities": capabilities})
    return client


@pytest.fixture
async def editor() -> AsyncIterator[HostClient]:
    """A host whose client declared workspace.applyEdit."""
    client = await serve(True)
    yield client
    await client.close()


@pytest.fixture
async def plain() -> AsyncIterator[HostClient]:
    """A host whose client declared nothing."""
    client = await serve(False)
    yield client
    await client.close()


async def create(host: HostClient, sim: Simulator, cwd: Path, **extra: Any) -> str:
    extra.setdefault("permissions", ALLOW_WRITES)
    config = llm_config(sim, "anthropic", tools=WRITE_TOOLS, cwd=str(cwd), **extra)
    agent_id: str = (await host.request("agent/create", {"config": config}))["agentId"]
    return agent_id


def utf16_offset(text: str, line: int, character: int) -> int:
    """The index in ``text`` of an LSP position (UTF-16 characters)."""
    lines = text.split("\n")
    start = sum(len(item) + 1 for item in lines[:line])
    units = lines[line].encode("utf-16-le")[: character * 2].decode("utf-16-le")
    return start + len(units)


class EditingClient:
    """Applies ``workspace/applyEdit`` to the disk as an editor would, and
    notes what the disk held when each request came."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.disk_before: list[str | None] = []
        self.answer = answer

    def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(params)
        changes = params["edit"]["documentChanges"]
        path = Path(unquote(urlparse(changes[-1]["textDocument"]["uri"]).path))
        self.disk_before.append(path.read_text() if path.exists() else None)
        if self.answer is not None:
            return self.answer
        for change in changes:
            if change.get("kind") == "create":
                target = Path(unquote(urlparse(change["uri"]).path))
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
                continue
            text = path.read_text()
            for edit in change["edits"]:
                start = edit["range"]["start"]
                end = edit["range"]["end"]
                begin = utf16_offset(text, start["line"], start["character"])
                finish = utf16_offset(text, end["line"], end["character"])
                text = text[:begin] + edit["newText"] + text[finish:]
            path.write_text(text)
        return {"applied": True}


async def test_an_edit_goes_to_the_client_with_the_right_range_and_only_it_writes(
    editor: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    source = tmp_path / "src" / "main.py"
    source.parent.mkdir()
    source.write_text("# π 😀 header\nvalue = 1  # 😀 old\nend\n")
    client = EditingClient()
    editor.handlers["workspace/applyEdit"] = client
    agent = await create(editor, sim, tmp_path)
    sim.script(
        reply(
            tool_use("e", "file_edit", path="src/main.py", old="1  # 😀 old", new="2  # new"),
            tool_use("w", "file_write", path="docs/new.md", content="# New\n"),
        ),
        Reply.text("done"),
    )
    result = await editor.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True, result
    edit, write = client.requests
    (document,) = edit["edit"]["documentChanges"]
    assert document["textDocument"] == {"uri": source.as_uri(), "version": None}
    # Line 1, after "value = " (8 UTF-16 units) to after "😀 old" (the emoji is 2 units).
    assert document["edits"] == [
        {
            "range": {"start": {"line": 1, "character": 8}, "end": {"line": 1, "character": 19}},
            "newText": "2  # new",
        }
    ]
    new_file = tmp_path / "docs" / "new.md"
    create_file, fill = write["edit"]["documentChanges"]
    assert create_file == {
        "kind": "create",
        "uri": new_file.as_uri(),
        "options": {"ignoreIfExists": True},
    }
    assert fill["edits"] == [
        {
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "newText": "# New\n",
        }
    ]
    # The host had written nothing when the client was asked.
    assert client.disk_before == ["# π 😀 header\nvalue = 1  # 😀 old\nend\n", None]
    assert source.read_text() == "# π 😀 header\nvalue = 2  # new\nend\n"
    assert new_file.read_text() == "# New\n"
    first, second = results_sent(sim)
    assert "is_error" not in first and "applied in the editor" in first["content"]
    assert "is_error" not in second


async def test_the_clients_refusal_is_an_error_result(
    editor: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("keep\n")
    client = EditingClient({"applied": False, "failureReason": "the file is read-only here"})
    editor.handlers["workspace/applyEdit"] = client
    agent = await create(editor, sim, tmp_path)
    sim.script(
        reply(tool_use("e", "file_edit", path="a.txt", old="keep", new="gone")),
        Reply.text("ok"),
    )
    result = await editor.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True
    (refused,) = results_sent(sim)
    assert refused["is_error"] is True
    assert refused["content"] == (
        "file_edit: the editor refused the edit: the file is read-only here"
    )
    assert (tmp_path / "a.txt").read_text() == "keep\n"


async def test_without_the_capability_the_host_writes_atomically_keeping_the_mode(
    plain: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o750)
    inode = script.stat().st_ino
    agent = await create(plain, sim, tmp_path)
    sim.script(
        reply(
            tool_use("e", "file_edit", path="run.sh", old="echo old", new="echo new"),
            tool_use("w", "file_write", path="deep/er/new.txt", content="fresh\n"),
        ),
        Reply.text("done"),
    )
    result = await plain.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True, result
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert script.stat().st_ino != inode  # replaced by a rename, not rewritten in place
    assert (tmp_path / "deep" / "er" / "new.txt").read_text() == "fresh\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep", "run.sh"]  # no temp files left
    edited, written = results_sent(sim)
    assert edited["content"] == "edited run.sh: replaced lines 2-2"
    assert written["content"] == "created deep/er/new.txt (6 characters)"


@pytest.mark.parametrize("declared", [True, False])
async def test_paths_outside_cwd_are_refused(
    declared: bool, sim: Simulator, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    (work / "link").symlink_to(outside)
    (work / "dirlink").symlink_to(tmp_path)
    host = await serve(declared)
    client = EditingClient()
    host.handlers["workspace/applyEdit"] = client
    try:
        agent = await create(host, sim, work)
        sim.script(
            reply(
                tool_use("a", "file_write", path="../escape.txt", content="x"),
                tool_use("b", "file_write", path=str(tmp_path / "abs.txt"), content="x"),
                tool_use("c", "file_edit", path="link", old="outside", new="inside"),
                tool_use("d", "file_write", path="dirlink/escape.txt", content="x"),
            ),
            Reply.text("done"),
        )
        result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    finally:
        await host.close()
    assert result["success"] is True
    for refused in results_sent(sim):
        assert refused["is_error"] is True
        assert "is outside the agent's working directory" in refused["content"], refused
    assert client.requests == []
    assert outside.read_text() == "outside\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outside.txt", "work"]


async def test_a_missing_or_ambiguous_old_tells_the_model_why(
    plain: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("x = 1\nx = 1\n")
    agent = await create(plain, sim, tmp_path)
    sim.script(
        reply(
            tool_use("m", "file_edit", path="a.txt", old="y = 2", new="z"),
            tool_use("t", "file_edit", path="a.txt", old="x = 1", new="z"),
            tool_use("n", "file_edit", path="none.txt", old="a", new="b"),
        ),
        Reply.text("done"),
    )
    await plain.request("agent/run", {"agentId": agent, "input": "go"})
    missing, twice, nofile = results_sent(sim)
    assert missing["content"] == (
        "file_edit: old does not occur in a.txt; read the file again and copy the text "
        "to replace exactly, whitespace included"
    )
    assert twice["content"] == (
        "file_edit: old occurs 2 times in a.txt; include more of the surrounding text "
        "so that it occurs once"
    )
    assert nofile["content"] == "file_edit: none.txt does not exist; use file_write to create it"
    assert all(result["is_error"] for result in (missing, twice, nofile))
    assert (tmp_path / "a.txt").read_text() == "x = 1\nx = 1\n"


async def test_the_host_keeps_owner_and_links_and_refuses_read_only_and_oversized(
    plain: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    """An edit on disk keeps the file's owner and mode and its other hard
    links; a read-only file and a text over 4 MiB are error results the model
    reads, and nothing changes."""
    owned, linked, locked = tmp_path / "owned.txt", tmp_path / "linked.txt", tmp_path / "locked.txt"
    for path in (owned, linked, locked):
        path.write_text("old\n")
    owned.chmod(0o640)
    if os.getuid() == 0:  # only root can give a file to another user
        os.chown(owned, 4321, 4321)
    other_name = tmp_path / "other-name.txt"
    os.link(linked, other_name)
    locked.chmod(0o444)
    agent = await create(plain, sim, tmp_path)
    huge = "x" * (4 * 1024 * 1024 + 1)
    sim.script(
        reply(
            tool_use("o", "file_edit", path="owned.txt", old="old", new="new"),
            tool_use("l", "file_write", path="linked.txt", content="new\n"),
            tool_use("r", "file_edit", path="locked.txt", old="old", new="new"),
            tool_use("h", "file_write", path="huge.txt", content=huge),
        ),
        Reply.text("done"),
    )
    result = await plain.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True, result
    assert owned.read_text() == "new\n" and stat.S_IMODE(owned.stat().st_mode) == 0o640
    if os.getuid() == 0:
        assert (owned.stat().st_uid, owned.stat().st_gid) == (4321, 4321)
    assert other_name.read_text() == "new\n"  # the link is not split
    assert linked.stat().st_ino == other_name.stat().st_ino
    assert locked.read_text() == "old\n" and stat.S_IMODE(locked.stat().st_mode) == 0o444
    assert not (tmp_path / "huge.txt").exists()
    edited, written, read_only, oversized = results_sent(sim)
    assert "is_error" not in edited and "is_error" not in written
    assert read_only["is_error"] is True
    assert (
        read_only["content"] == "file_edit: locked.txt is read-only (mode 0444); it was not changed"
    )
    assert oversized["is_error"] is True
    assert "huge.txt would be over 4194304 bytes" in oversized["content"]
