"""The ACP door's session lifecycle, driven by the official TypeScript SDK's
client against the real ``oma-host acp``: ``session/resume``, ``session/fork``,
``session/close`` and ``session/delete`` across processes sharing one state
directory, titles sent as ``session_info_update``, ``session/list`` paged by
its cursor, a ``cwd`` refused when it is not an absolute directory, and
errors whose ``message`` says what was wrong."""

from __future__ import annotations

from typing import Any

from oma_host.acp_server.session_store import LIST_PAGE
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, step, text
from tests.acp_server.raw_editor import raw_editor, stderr_of


def _roles_and_texts(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (message["role"], "".join(b.get("text", "") for b in message["content"]))
        for message in messages
    ]


def test_the_door_advertises_every_session_method(door: Door) -> None:
    (init,) = door.run(initialize())
    capabilities = init["result"]["agentCapabilities"]["sessionCapabilities"]
    assert set(capabilities) >= {"list", "resume", "close", "delete", "fork"}


def test_resume_fork_close_and_delete_across_processes(door: Door) -> None:
    cwd = str(door.cwd)
    door.sim.script(Reply.text("first answer"))
    _, new, _ = door.run(initialize(), new_session(door.cwd), prompt(text("first")))
    original = new["result"]["sessionId"]

    # A second process resumes it (no replay) and goes on; then forks it.
    door.sim.script(Reply.text("second answer"), Reply.text("fork answer"))
    fork_step = step("session/fork", sessionId=original, cwd=cwd, mcpServers=[])
    fork_step["saveAs"] = "fork"
    _, resumed, second, forked, in_fork = door.run(
        initialize(),
        step("session/resume", sessionId=original, cwd=cwd, mcpServers=[]),
        prompt(text("second"), session=original),
        fork_step,
        prompt(text("in the fork"), session="$fork"),
    )
    assert "error" not in resumed, resumed
    assert resumed["updates"] == []  # resume replays nothing
    assert second["result"]["stopReason"] == "end_turn"
    assert _roles_and_texts(door.sim.requests[-2].body["messages"]) == [
        ("user", "first"),
        ("assistant", "first answer"),
        ("user", "second"),
    ]
    fork = forked["result"]["sessionId"]
    assert fork != original
    assert {o["id"] for o in forked["result"]["configOptions"]} >= {"agent"}
    assert in_fork["result"]["stopReason"] == "end_turn"
    assert _roles_and_texts(door.sim.requests[-1].body["messages"]) == [
        ("user", "first"),
        ("assistant", "first answer"),
        ("user", "second"),
        ("assistant", "second answer"),
        ("user", "in the fork"),
    ]

    # A third process: both are listed, the fork with the original's title;
    # the original goes on without the fork's turn; closing ends a live
    # session, whose next prompt is refused; deleting forgets one.
    door.sim.script(Reply.text("third answer"))
    _, listed, _, third, closed, after_close, deleted, listed_after, load_deleted = door.run(
        initialize(),
        step("session/list", cwd=cwd),
        step("session/resume", sessionId=original, cwd=cwd, mcpServers=[]),
        prompt(text("third"), session=original),
        step("session/close", sessionId=original),
        prompt(text("after close"), session=original),
        step("session/delete", sessionId=fork),
        step("session/list", cwd=cwd),
        step("session/load", sessionId=fork, cwd=cwd, mcpServers=[]),
    )
    titles = {info["sessionId"]: info["title"] for info in listed["result"]["sessions"]}
    assert titles == {original: "first", fork: "first"}
    assert third["result"]["stopReason"] == "end_turn"
    assert _roles_and_texts(door.sim.requests[-1].body["messages"])[-2:] == [
        ("assistant", "second answer"),
        ("user", "third"),
    ]
    assert closed["result"] == {}  # the SDK's void answer
    assert after_close["error"]["code"] == -32602
    assert after_close["error"]["message"].startswith("session/prompt: no session ")
    assert deleted["result"] == {}
    assert [info["sessionId"] for info in listed_after["result"]["sessions"]] == [original]
    assert load_deleted["error"]["code"] == -32602
    assert load_deleted["error"]["data"]["type"] == "SessionNotFound"


def test_a_closed_session_can_be_resumed_in_the_same_process(door: Door) -> None:
    door.sim.script(Reply.text("one"), Reply.text("two"))
    cwd = str(door.cwd)
    _, _, _, closed, resumed, turn = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("before")),
        step("session/close", sessionId="$session"),
        step("session/resume", sessionId="$session", cwd=cwd, mcpServers=[]),
        prompt(text("after")),
    )
    assert "error" not in closed and "error" not in resumed
    assert turn["result"]["stopReason"] == "end_turn"
    assert len(door.sim.requests[-1].body["messages"]) == 3


def test_unknown_sessions_are_refused_by_every_method(door: Door) -> None:
    cwd = str(door.cwd)
    answers = door.run(
        initialize(),
        step("session/resume", sessionId="sess_nope", cwd=cwd, mcpServers=[]),
        step("session/fork", sessionId="sess_nope", cwd=cwd, mcpServers=[]),
        step("session/close", sessionId="sess_nope"),
        step("session/delete", sessionId="sess_nope"),
    )[1:]
    for answer in answers:
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"]["type"] == "SessionNotFound"
        assert "'sess_nope'" in answer["error"]["message"]


def test_the_first_prompt_titles_the_session_once(door: Door) -> None:
    door.sim.script(Reply.text("a"), Reply.text("b"))
    _, _, first, second = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("  Fix the   failing\ntest  ")),
        prompt(text("and then this")),
    )
    titles = [u for u in first["updates"] if u["sessionUpdate"] == "session_info_update"]
    assert len(titles) == 1
    assert titles[0]["title"] == "Fix the failing test"
    assert titles[0]["updatedAt"]
    assert not [u for u in second["updates"] if u["sessionUpdate"] == "session_info_update"]


def test_session_list_pages_with_its_cursor(door: Door) -> None:
    count = LIST_PAGE + 3
    steps = [initialize(), *(new_session(door.cwd) for _ in range(count))]
    created = [answer["result"]["sessionId"] for answer in door.run(*steps)[1:]]
    (_, first) = door.run(initialize(), step("session/list", cwd=str(door.cwd)))
    cursor = first["result"]["nextCursor"]
    _, second, bad = door.run(
        initialize(),
        step("session/list", cwd=str(door.cwd), cursor=cursor),
        step("session/list", cursor="not-a-cursor"),
    )
    pages = [first["result"]["sessions"], second["result"]["sessions"]]
    assert [len(page) for page in pages] == [LIST_PAGE, 3]
    assert "nextCursor" not in second["result"]
    listed = [info["sessionId"] for page in pages for info in page]
    assert sorted(listed) == sorted(created)  # each once, none left out
    assert bad["error"]["code"] == -32602
    assert "not-a-cursor" in bad["error"]["message"]


def test_a_cwd_that_is_not_an_absolute_directory_is_refused(door: Door) -> None:
    missing = door.tmp / "missing"
    _, relative, absent, no_cwd, listed = door.run(
        initialize(),
        step("session/new", cwd="project", mcpServers=[]),
        step("session/new", cwd=str(missing), mcpServers=[]),
        step("session/new", mcpServers=[]),
        step("session/list"),
    )
    assert relative["error"]["code"] == -32602
    assert relative["error"]["message"] == (
        "session/new: cwd must be an absolute path; 'project' is relative"
    )
    assert absent["error"]["message"] == f"session/new: cwd {str(missing)!r} is not a directory"
    # A field the schema requires: the message names it, data keeps the errors.
    assert no_cwd["error"]["code"] == -32602
    assert no_cwd["error"]["message"] == "session/new: invalid params: cwd: Field required"
    assert no_cwd["error"]["data"]["errors"][0]["loc"] == ["cwd"]
    assert listed["result"]["sessions"] == []  # nothing was opened


def test_acpx_shows_the_explanation_of_an_error(door: Door) -> None:
    """acpx prints an error's message and nothing of its data: the message
    must say what was wrong."""
    created = door.acpx("sessions", "new")
    assert created.returncode == 0, created.stderr
    refused = door.acpx("set", "agent", "nobody")
    assert refused.returncode != 0
    assert "session/set_config_option: agent: 'nobody' is not one of ['claude']" in (refused.stderr)


async def test_a_state_directory_that_cannot_be_used_is_refused_without_a_traceback(
    door: Door,
) -> None:
    """A state directory that is a link (anyone's folder could be behind
    it): ``session/new`` is refused naming it, the door logs one line and
    goes on serving."""
    target = door.tmp / "elsewhere"
    target.mkdir()
    door.state.symlink_to(target)
    async with raw_editor(door) as editor:
        await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        refused = await editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
        again = await editor.call("initialize", {"protocolVersion": 1})
        stderr = await stderr_of(editor)
    assert refused["error"]["code"] == -32603
    assert f"the folder {door.state} is a symbolic link" in refused["error"]["message"]
    assert "result" in again
    assert "Traceback" not in stderr
