"""Rewinding an ACP session, driven by the official TypeScript SDK's client
against the real ``oma-host acp`` and the provider simulator: a session of
three turns that write files (``file_write``) and run a command that writes
two more is rewound to its first turn by the extension method
``_oma/session/rewind`` in a new process (the checkpoints are stored with
the session); the files of that moment are back, the command's are gone, a
file the user edited after the last turn is left as the user left it and
named; ``session/load`` replays the kept turn only and the provider's next
request carries it alone. ``/rewind`` lists the messages and rewinds to
before one; bad input is refused, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, step, text
from tests.builders import THREE_TURNS_ASKED, reply, three_turns_replies

ALLOW = [{"tool": "file_write", "action": "allow"}, {"tool": "shell", "action": "allow"}]


def _workspace(cwd: Path) -> None:
    (cwd / "notes.txt").write_text("as the user wrote it\n")


def _agent(door: Door) -> None:
    door.write_agents(
        first=door.llm(tools=["file_write", "shell"], permissions=ALLOW, environment=False)
    )


def _script_three_turns(door: Door) -> None:
    door.sim.script(*three_turns_replies())


def _three_turns() -> list[dict[str, Any]]:
    return [prompt(text(said)) for said in THREE_TURNS_ASKED]


def _load(door: Door, session: str) -> dict[str, Any]:
    return step("session/load", sessionId=session, cwd=str(door.cwd), mcpServers=[])


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [
        block["text"]
        for message in body["messages"]
        if message["role"] == "user"
        for block in message["content"]
        if block.get("type") == "text"
    ]


def test_the_extension_method_rewinds_a_stored_session_and_its_files(door: Door) -> None:
    _agent(door)
    _workspace(door.cwd)
    _script_three_turns(door)
    steps = door.run(initialize(), new_session(door.cwd), *_three_turns())
    session = steps[1]["result"]["sessionId"]
    assert all(done["result"]["stopReason"] == "end_turn" for done in steps[2:])
    assert (door.cwd / "made" / "c.txt").exists() and (door.cwd / "d.txt").exists()
    (door.cwd / "two.txt").write_text("the user's own edit\n")  # after the last turn

    rewind = step("_oma/session/rewind", sessionId=session, keepTurns=1, restoreFiles=True)
    _, _, rewound = door.run(initialize(), _load(door, session), rewind)

    cwd = door.cwd
    assert rewound["result"] == {
        "keptTurns": 1,
        "removedTurns": 2,
        "messages": 4,
        "files": {
            "restored": [str(cwd / "notes.txt")],
            "removed": [str(cwd / "d.txt"), str(cwd / "made" / "c.txt")],
            "leftAlone": [str(cwd / "two.txt")],
            "notRecorded": [],
        },
    }
    assert (cwd / "notes.txt").read_text() == "as the user wrote it\n"
    assert (cwd / "one.txt").read_text() == "first turn\n"
    assert not (cwd / "d.txt").exists() and not (cwd / "made").exists()
    assert (cwd / "two.txt").read_text() == "the user's own edit\n"
    assert (door.state / "checkpoints" / f"{session}.git").is_dir()
    assert not (cwd / ".git").exists()

    # A new process loads the rewound session: the kept turn is replayed, and
    # the provider's next request carries it alone before the new prompt.
    door.sim.script(reply("a fresh answer"))
    before = len(door.sim.requests)
    _, loaded, answered = door.run(
        initialize(), _load(door, session), prompt(text("try again"), session=session)
    )
    replayed = [
        update["content"]["text"]
        for update in loaded["updates"]
        if update.get("sessionUpdate") == "user_message_chunk"
    ]
    assert replayed == ["write one"]
    assert answered["result"]["stopReason"] == "end_turn"
    (request,) = door.sim.requests[before:]
    assert _user_texts(request.body) == ["write one", "try again"]


def test_rewind_lists_the_messages_and_rewinds_to_before_one(door: Door) -> None:
    _agent(door)
    _workspace(door.cwd)
    _script_three_turns(door)
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        *_three_turns(),
        prompt(text("/rewind")),
        prompt(text("/rewind 9")),
        prompt(text("/rewind 2")),
        prompt(text("/rewind")),
    )
    listing, beyond, rewound, after = (reply_text(done["updates"]) for done in steps[-4:])
    assert listing.startswith("1. write one\n2. write two\n3. run it\n\n/rewind N goes back")
    assert beyond.startswith("/rewind takes a message number (1 to 3)")
    assert rewound == (
        "Rewound the conversation to before message 2: 1 turn(s) kept, 2 removed. "
        "Files restored: notes.txt. Files removed (created since): d.txt, made/c.txt, two.txt."
    )
    assert after.startswith("1. write one\n\n")
    assert (door.cwd / "notes.txt").read_text() == "as the user wrote it\n"
    assert sorted(path.name for path in door.cwd.iterdir()) == ["notes.txt", "one.txt"]
    # /rewind is offered with the host's own commands, saying what it takes.
    (offered,) = [
        note["update"]
        for note in door.notifications
        if note["update"]["sessionUpdate"] == "available_commands_update"
    ]
    (command,) = [c for c in offered["availableCommands"] if c["name"] == "rewind"]
    assert command["input"] == {"hint": "message number"}


def test_rewind_keeping_the_files_cuts_the_conversation_alone(door: Door) -> None:
    _agent(door)
    _workspace(door.cwd)
    _script_three_turns(door)
    steps = door.run(
        initialize(), new_session(door.cwd), *_three_turns(), prompt(text("/rewind 3 keep-files"))
    )
    said = reply_text(steps[-1]["updates"])
    assert said == (
        "Rewound the conversation to before message 3: 2 turn(s) kept, 1 removed. "
        "The files were left as they are."
    )
    assert (door.cwd / "d.txt").exists()


def test_bad_rewind_requests_are_refused_naming_what_is_wrong(door: Door) -> None:
    # An agent that only reads: its turns change no file, so none has a checkpoint.
    door.write_agents(first=door.llm(tools=["file_read"], environment=False))
    door.sim.script(reply("hello"))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("hi")),
        step("_oma/session/rewind", sessionId="$session", keepTurns=-1),
        step("_oma/session/rewind", sessionId="$session", keepTurns=1),
        step("_oma/session/rewind", sessionId="$session", keepTurns="0"),
        step("_oma/session/rewind", keepTurns=0),
        step("_oma/session/rewind", sessionId="sess_nope", keepTurns=0),
        step("_oma/session/rewind", sessionId="$session", keepTurns=0, restoreFiles=True),
        step("_oma/session/rewind", sessionId="$session", keepTurns=0),
    )
    negative, beyond, mistyped, missing, unknown, no_checkpoint, done = steps[3:]
    assert negative["error"]["code"] == -32602
    assert "keepTurns must be 0 or more; -1 is negative" in negative["error"]["message"]
    assert beyond["error"]["code"] == -32602
    assert (
        "keepTurns: 1 cuts no turn: the history holds 1 turn(s); keep 0 to 0"
        in (beyond["error"]["message"])
    )
    assert "keepTurns must be an integer" in mistyped["error"]["message"]
    assert "sessionId must be a string" in missing["error"]["message"]
    assert unknown["error"]["data"]["type"] == "SessionNotFound"
    assert no_checkpoint["error"]["code"] == -32602
    assert (
        "restoreFiles: turn 1 has no checkpoint of the workspace"
        in (no_checkpoint["error"]["message"])
    )
    assert not (door.state / "checkpoints").exists()
    assert done["result"] == {"keptTurns": 0, "removedTurns": 1, "messages": 0}
