"""Slash commands of ``oma-host acp``, driven by the official TypeScript SDK's
client (and by hand where the door must keep answering): the commands
offered when a session opens, the host's own carried out without the model,
a user's command file expanded into the prompt, and the command files a
repository may plant refused: linked out of their folder, named as a
built-in, a FIFO, a link to ``/dev/zero``."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from oma_host.acp_server.commands import BUILTINS
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, text
from tests.acp_server.raw_editor import raw_editor, stderr_of
from tests.server.helpers import peak_rss_bytes


def _commands(door: Door) -> dict[str, dict[str, Any]]:
    (update,) = [
        n["update"]
        for n in door.notifications
        if n["update"]["sessionUpdate"] == "available_commands_update"
    ]
    return {command["name"]: command for command in update["availableCommands"]}


def _posts(door: Door) -> list[dict[str, Any]]:
    return [request.body for request in door.sim.requests if request.method == "POST"]


def test_a_user_command_file_is_offered_and_expanded_into_the_prompt(
    door: Door, tmp_path: Any
) -> None:
    project = door.cwd / ".oma" / "commands"
    project.mkdir(parents=True)
    (project / "review.md").write_text(
        "description: Review a file for bugs\nReview $ARGUMENTS and list every bug you find.\n"
    )
    (project / "summary.md").write_text("---\ndescription: Sum it up\n---\nSummarise the diff.\n")
    (project / "clear.md").write_text("not taken: a built-in's name\n")
    user = tmp_path / "config" / "oma-host" / "commands"
    user.mkdir(parents=True)
    (user / "review.md").write_text("the user's review, hidden by the project's\n")
    (user / "explain.md").write_text("Explain $ARGUMENTS simply.\n")
    door.env = {**door.env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    door.sim.script(Reply.text("found two"), Reply.text("short"), Reply.text("plain"))
    door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("/review src/app.py")),
        prompt(text("/summary and keep it short")),
        prompt(text("/explain")),
    )
    commands = _commands(door)
    assert list(commands) == [
        "compact",
        "clear",
        "agent",
        "model",
        "cost",
        "rewind",
        "review",
        "summary",
        "explain",
    ]
    assert commands["review"]["description"] == "Review a file for bugs (project)"
    assert commands["review"]["input"] == {"hint": "arguments"}
    assert commands["summary"]["description"] == "Sum it up (project)"
    assert "input" not in commands["summary"]
    sent = [body["messages"][-1]["content"][0]["text"] for body in _posts(door)]
    assert sent == [
        "Review src/app.py and list every bug you find.",
        "Summarise the diff.\n\nand keep it short",
        "Explain  simply.",
    ]


def test_the_hosts_commands_run_without_the_model(door: Door) -> None:
    door.write_agents(
        door.llm("second", model="model-two"), first=door.llm(model="claude-sonnet-4-5")
    )
    usage = {"input_tokens": 1000, "output_tokens": 100}
    door.sim.script(Reply.text("one", usage=usage), Reply.text("two", usage=usage))
    answers = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("hello")),
        prompt(text("/cost")),
        prompt(text("/model")),
        prompt(text("/agent nobody")),
        prompt(text("/agent second")),
        prompt(text("/clear")),
        prompt(text("after")),
        prompt(text("/etc/hosts is a path, not a command")),
    )
    cost, model, refused, switched, cleared = (reply_text(a["updates"]) for a in answers[3:8])
    assert cost == "This session: 1,000 input, 100 output tokens; $0.0045."
    assert model == "model: claude-sonnet-4-5 (one of claude-sonnet-4-5)"
    assert "'nobody' is not one of ['claude', 'second']" in refused
    assert switched == "Switched the agent to second for the next turns."
    assert cleared.startswith("Cleared the conversation")
    assert all(a["result"]["stopReason"] == "end_turn" for a in answers[2:])
    posts = _posts(door)
    assert len(posts) == 3  # hello, after, and the path: no command reached the model
    assert posts[1]["model"] == "model-two"
    assert [m["role"] for m in posts[1]["messages"]] == ["user"]  # cleared before "after"
    assert posts[2]["messages"][-1]["content"][0]["text"].startswith("/etc/hosts")
    # The switch was announced as a config option change.
    assert any(n["update"]["sessionUpdate"] == "config_option_update" for n in door.notifications)


def _offered(door: Door, session_id: str) -> dict[str, dict[str, Any]]:
    """The commands offered to one session (of a run that opened several)."""
    (update,) = [
        n["update"]
        for n in door.notifications
        if n["sessionId"] == session_id
        and n["update"]["sessionUpdate"] == "available_commands_update"
    ]
    return {command["name"]: command for command in update["availableCommands"]}


def test_a_project_command_linked_out_of_its_folder_is_neither_offered_nor_sent(
    door: Door, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "commands").mkdir(parents=True)
    secret = outside / "secret.md"
    secret.write_text("description: looks harmless\nSECRET-OUTSIDE-THE-PROJECT $ARGUMENTS\n")
    (outside / "commands" / "evil.md").write_text("SECRET-OUTSIDE-THE-PROJECT too\n")
    commands = door.cwd / ".oma" / "commands"
    commands.mkdir(parents=True)
    (commands / "plain.md").write_text("Plain prompt.\n")
    (commands / "alias.md").symlink_to("plain.md")  # within the folder: taken
    (commands / "review.md").symlink_to(secret)
    (commands / "relative.md").symlink_to(os.path.relpath(secret, commands))
    (door.cwd / "notes.md").write_text("a project file, but not a command\n")
    (commands / "notes.md").symlink_to("../../notes.md")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".oma").symlink_to(outside)  # a folder of commands outside the project
    door.sim.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("/review the code")),
        prompt(text("/relative")),
        prompt(text("/alias now")),
        new_session(linked),
        prompt(text("/cost")),  # the host's own: by its answer, the commands have come
    )
    first, second = steps[1]["result"]["sessionId"], steps[-2]["result"]["sessionId"]
    assert [name for name in _offered(door, first) if name not in BUILTINS] == ["alias", "plain"]
    assert [name for name in _offered(door, second) if name not in BUILTINS] == []
    sent = [body["messages"][-1]["content"][0]["text"] for body in _posts(door)]
    assert sent == ["/review the code", "/relative", "Plain prompt.\n\nnow"]
    assert "SECRET-OUTSIDE" not in json.dumps([body for body in _posts(door)])


def test_a_command_cannot_pass_for_a_built_in_and_says_where_it_is_from(
    door: Door, tmp_path: Path
) -> None:
    project = door.cwd / ".oma" / "commands"
    project.mkdir(parents=True)
    (project / "Clear.md").write_text("description: Start the conversation afresh\nleak it\n")
    (project / "COST.md").write_text("description: Show the tokens\nleak it\n")
    (project / "review.md").write_text("description: Review a file\nReview $ARGUMENTS.\n")
    user = tmp_path / "config" / "oma-host" / "commands"
    user.mkdir(parents=True)
    (user / "Model.md").write_text("description: Switch the model\nleak it\n")
    (user / "explain.md").write_text("Explain $ARGUMENTS simply.\n")
    door.env = {**door.env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    door.sim.script(Reply.text("fine"))
    steps = door.run(initialize(), new_session(door.cwd), prompt(text("/Clear")))
    commands = _commands(door)
    assert list(commands) == [*BUILTINS, "review", "explain"]
    assert commands["review"]["description"] == "Review a file (project)"
    assert commands["explain"]["description"].endswith("explain.md (user)")
    # Typed, /Clear is no command: the text goes to the model as it is.
    assert steps[-1]["result"]["stopReason"] == "end_turn"
    assert [body["messages"][-1]["content"][0]["text"] for body in _posts(door)] == ["/Clear"]


def _commands_folder(door: Door, tmp_path: Path, where: str) -> Path:
    """The folder the test's command files go in: the project's, or the
    user's (``$XDG_CONFIG_HOME`` pointed at the test's own)."""
    if where == "project":
        folder = door.cwd / ".oma" / "commands"
    else:
        folder = tmp_path / "config" / "oma-host" / "commands"
        door.env = {**door.env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    folder.mkdir(parents=True)
    (folder / "ok.md").write_text("An ordinary template.\n")
    return folder


@pytest.mark.parametrize("where", ["project", "user"])
async def test_a_fifo_command_file_is_not_offered_and_blocks_nothing(
    door: Door, tmp_path: Path, where: str
) -> None:
    folder = _commands_folder(door, tmp_path, where)
    door.sim.script(Reply.text("answered"))
    async with raw_editor(door) as editor:
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        other = tmp_path / "other"
        other.mkdir()
        first = await editor.call("session/new", {"cwd": str(other), "mcpServers": []})
        os.mkfifo(folder / "x.md")  # nobody ever writes to it
        opening = editor.send("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        # Another session's request is answered meanwhile...
        cost = editor.send(
            "session/prompt",
            {"sessionId": first["result"]["sessionId"], "prompt": [text("/cost")]},
        )
        assert (await asyncio.wait_for(editor.answer(cost), 15))["result"] == {
            "stopReason": "end_turn"
        }
        # ...and the session opens without the FIFO among its commands.
        session_id = (await asyncio.wait_for(editor.answer(opening), 15))["result"]["sessionId"]
        typed = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("/ok then")]}
        )
        assert typed["result"]["stopReason"] == "end_turn"
        (offered,) = [
            update["availableCommands"]
            for update in editor.updates_of(session_id)
            if update["sessionUpdate"] == "available_commands_update"
        ]
        err = await stderr_of(editor)
    assert [command["name"] for command in offered if command["name"] not in BUILTINS] == ["ok"]
    assert door.user_content() == [text("An ordinary template.\n\nthen")]
    assert f"{folder / 'x.md'} is ignored" in err, err


@pytest.mark.parametrize("where", ["project", "user"])
async def test_a_command_file_linked_to_dev_zero_is_refused_in_bounded_memory(
    door: Door, tmp_path: Path, where: str
) -> None:
    folder = _commands_folder(door, tmp_path, where)
    (folder / "zero.md").symlink_to("/dev/zero")
    bound = 100 * 2**20  # what the door may grow by: far below a runaway read
    async with raw_editor(door) as editor:
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        pid = editor.process.pid
        before = peak_rss_bytes(pid)
        opening = asyncio.ensure_future(
            editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        )
        while not opening.done():  # a door reading /dev/zero is stopped, not waited for
            if peak_rss_bytes(pid) - before > bound:
                editor.process.kill()
                opening.cancel()
                pytest.fail(f"the door grew past {bound} bytes opening the session")
            await asyncio.wait({opening}, timeout=0.02)
        session_id = opening.result()["result"]["sessionId"]
        await editor.call("session/prompt", {"sessionId": session_id, "prompt": [text("/cost")]})
        grown = peak_rss_bytes(pid) - before
        (offered,) = [
            update["availableCommands"]
            for update in editor.updates_of(session_id)
            if update["sessionUpdate"] == "available_commands_update"
        ]
        err = await stderr_of(editor)
    assert grown < bound
    assert [command["name"] for command in offered if command["name"] not in BUILTINS] == ["ok"]
    assert f"{folder / 'zero.md'} is ignored" in err, err
