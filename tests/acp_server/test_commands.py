"""Slash commands of ``oma-host acp``, driven by the official TypeScript SDK's
client: the commands offered when a session opens, the host's own carried
out without the model, and a user's command file expanded into the prompt."""

from __future__ import annotations

from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, text


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
        "review",
        "summary",
        "explain",
    ]
    assert commands["review"]["description"] == "Review a file for bugs"
    assert commands["review"]["input"] == {"hint": "arguments"}
    assert commands["summary"]["description"] == "Sum it up"
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
