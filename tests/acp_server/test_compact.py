"""Compaction on the ACP door, driven by the official TypeScript SDK's
client against the real ``oma-host acp``: ``/compact`` summarises the
session's conversation with the agent's model, stores it so a new process
loads the compacted session, and reports the smaller context; a session of
one turn, or none, has nothing to compact; a compaction during a turn shows as a
thought."""

from __future__ import annotations

from typing import Any

from oma_host.testing.simulator import Fault, Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, step, text
from tests.llm.compaction_helpers import (
    SUMMARY_HEADING,
    first_text,
    is_summary_request,
    posts,
    provider_tokens,
    summaries,
    turn_requests,
)

WORDS = "the quick brown fox jumps over the lazy dog " * 6


def _of(updates: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [update for update in updates if update.get("sessionUpdate") == kind]


def test_compact_summarises_the_session_and_a_new_process_loads_it_so(door: Door) -> None:
    # No tools and no environment prompt: the context measured is the conversation's.
    door.write_agents(first=door.llm(tools=[], environment=False))
    given = summaries(door.sim)
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(3)))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(3)),
        prompt(text("/compact")),
    )
    session = steps[1]["result"]["sessionId"]
    compacted = steps[-1]
    assert compacted["result"]["stopReason"] == "end_turn"
    said = reply_text(compacted["updates"])
    assert said.startswith("Compacted the conversation to fit the model's context window: 6 ")
    assert "to 2 (about" in said and "the older turns summarised" in said
    (usage,) = _of(compacted["updates"], "usage_update")
    assert 0 < usage["used"] < 200
    # One summary request, with the agent's model; the turns before it, nothing more.
    assert len(given) == 1 and len(posts(door.sim)) == 4
    assert posts(door.sim)[-1].body["model"] == "model-one"

    door.sim.script(Reply.text("after the summary"))
    _, loaded, after = door.run(
        initialize(),
        step("session/load", sessionId=session, cwd=str(door.cwd), mcpServers=[]),
        prompt(text("and now?"), session=session),
    )
    replayed = _of(loaded["updates"], "user_message_chunk")
    assert replayed[0]["content"]["text"].startswith(SUMMARY_HEADING)
    assert given[0] in replayed[0]["content"]["text"]
    assert after["result"]["stopReason"] == "end_turn"
    sent = turn_requests(door.sim)[-1].body["messages"]
    assert len(sent) == 3 and given[0] in first_text(turn_requests(door.sim)[-1])
    assert sent[0]["content"][1]["text"] == f"question 2: {WORDS}"


def test_compact_on_a_session_of_one_turn_has_nothing_to_do(door: Door) -> None:
    door.sim.script(Reply.text("hello"))
    steps = door.run(
        initialize(), new_session(door.cwd), prompt(text("hi")), prompt(text("/compact"))
    )
    said = reply_text(steps[-1]["updates"])
    assert said.startswith("Nothing to compact: the conversation holds 2 messages in 1 turns")
    assert _of(steps[-1]["updates"], "usage_update") == []
    assert len(posts(door.sim)) == 1


def test_compact_in_a_new_session_says_the_conversation_is_empty(door: Door) -> None:
    steps = door.run(initialize(), new_session(door.cwd), prompt(text("/compact")))
    assert steps[-1]["result"]["stopReason"] == "end_turn"
    assert reply_text(steps[-1]["updates"]) == "Nothing to compact: the conversation is empty."
    assert posts(door.sim) == []


def test_a_compaction_during_a_turn_is_shown_as_a_thought(door: Door) -> None:
    summaries(door.sim)
    door.sim.count_tokens = provider_tokens()
    door.write_agents(first=door.llm(contextWindow=1_500, maxTokens=150))
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(8)))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(8)),
    )
    thoughts = [
        update["content"]["text"]
        for turn in steps[2:]
        for update in _of(turn["updates"], "agent_thought_chunk")
    ]
    assert thoughts and all(
        thought.startswith("Compacted the conversation to fit the model's context window")
        for thought in thoughts
    )
    assert all(turn["result"]["stopReason"] == "end_turn" for turn in steps[2:])


def _compactions(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(u["compactionId"], u["status"]) for u in _of(updates, "compaction_update")]


def test_a_client_that_takes_compaction_updates_sees_each_compaction_begin_and_end(
    door: Door,
) -> None:
    """``session.compaction``: each compaction during a turn is one id,
    ``in_progress`` then ``completed`` with what was compacted and the
    model's summary; no thought stands in for it."""
    given = summaries(door.sim)
    door.sim.count_tokens = provider_tokens()
    door.write_agents(first=door.llm(contextWindow=1_500, maxTokens=150))
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(8)))
    steps = door.run(
        initialize(session={"compaction": {}}),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(8)),
    )
    seen = [entry for turn in steps[2:] for entry in _compactions(turn["updates"])]
    assert len(given) >= 1 and len(seen) == 2 * len(given)
    ids = [compaction_id for compaction_id, _ in seen]
    assert len(set(ids)) == len(given)
    for n in range(len(given)):
        (first, started), (second, ended) = seen[2 * n], seen[2 * n + 1]
        assert first == second and (started, ended) == ("in_progress", "completed")
    done = [
        u
        for turn in steps[2:]
        for u in _of(turn["updates"], "compaction_update")
        if u["status"] == "completed"
    ]
    for update, summary in zip(done, given, strict=True):
        note, written = (block["text"] for block in update["summary"])
        assert note.startswith("Compacted the conversation to fit the model's context window")
        assert written == summary
    assert all(_of(turn["updates"], "agent_thought_chunk") == [] for turn in steps[2:])


def test_compact_sends_the_compaction_updates_too(door: Door) -> None:
    door.write_agents(first=door.llm(tools=[], environment=False))
    given = summaries(door.sim)
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(3)))
    steps = door.run(
        initialize(session={"compaction": {}}),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(3)),
        prompt(text("/compact")),
    )
    updates = steps[-1]["updates"]
    ((first, started), (second, ended)) = _compactions(updates)
    assert first == second and (started, ended) == ("in_progress", "completed")
    (done,) = [u for u in _of(updates, "compaction_update") if u["status"] == "completed"]
    assert done["summary"][1]["text"] == given[0]
    assert reply_text(updates).startswith("Compacted the conversation")


def test_a_compaction_that_fails_is_failed_with_its_error(door: Door) -> None:
    """The summary request fails: the compaction is ``failed`` with the
    provider's error for a client that takes compaction updates, a notice
    for one that takes notices alone; the turn fails either way."""
    door.sim.count_tokens = provider_tokens()
    door.write_agents(first=door.llm(contextWindow=1_500, maxTokens=150))

    def refuse_summaries(request: Any) -> Reply | Fault | None:
        return Fault(400, "the summary was refused") if is_summary_request(request) else None

    for capabilities, kind in (
        ({"compaction": {}}, "compaction_update"),
        ({"notices": {}}, "notice"),
    ):
        door.sim.responder = refuse_summaries
        door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(8)))
        steps = door.run(
            initialize(session=capabilities),
            new_session(door.cwd),
            *(prompt(text(f"question {n}: {WORDS}")) for n in range(8)),
        )
        failed = next(turn for turn in steps[2:] if "error" in turn)
        shown = _of(failed["updates"], kind)
        if kind == "compaction_update":
            assert [u["status"] for u in shown] == ["in_progress", "failed"]
            assert shown[0]["compactionId"] == shown[1]["compactionId"]
            assert "the summary was refused" in shown[1]["error"]
        else:
            (notice,) = shown
            assert notice["severity"] == "error"
            assert notice["title"] == "The conversation could not be compacted"
            assert "the summary was refused" in notice["description"]
