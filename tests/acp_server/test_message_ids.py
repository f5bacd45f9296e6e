"""``messageId`` on the ACP door, driven by the official TypeScript SDK's
client against the real ``oma-host acp``: every chunk of one reply shares an
id and the next reply has another; ``session/load`` replays each message
with the id its chunks streamed with, also after a compaction rewrote the
history."""

from __future__ import annotations

from typing import Any

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, step, text
from tests.builders import reply, tool_use
from tests.llm.compaction_helpers import provider_tokens, summaries

WORDS = "the quick brown fox jumps over the lazy dog " * 6
CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def _replies(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Each agent message's (messageId, text), its chunks joined, in order."""
    replies: list[tuple[str, str]] = []
    for update in updates:
        if update.get("sessionUpdate") != "agent_message_chunk":
            continue
        message, said = update["messageId"], update["content"]["text"]
        if replies and replies[-1][0] == message:
            said = replies.pop()[1] + said
        replies.append((message, said))
    return replies


def _load(door: Door, session: str) -> dict[str, Any]:
    _, loaded = door.run(
        initialize(), step("session/load", sessionId=session, cwd=str(door.cwd), mcpServers=[])
    )
    assert "error" not in loaded, loaded
    return loaded


def test_each_reply_has_its_id_and_a_load_replays_the_same(door: Door) -> None:
    door.write_agents(first=door.llm(tools=["glob"], environment=False))
    door.sim.script(
        reply("looking", tool_use("g", "glob", pattern="*")),
        Reply.text("found it"),
        Reply.text("second turn"),
    )
    _, new, first, second = door.run(
        initialize(),
        new_session(door.cwd),
        prompt(text("find")),
        prompt(text("again")),
    )
    session = new["result"]["sessionId"]
    live = _replies(first["updates"]) + _replies(second["updates"])
    ids = [message for message, _ in live]
    # "looking" and "found it" are two replies of one turn, "second turn" a third.
    assert [said for _, said in live] == ["looking", "found it", "second turn"]
    assert len(set(ids)) == 3

    loaded = _load(door, session)
    assert _replies(loaded["updates"]) == live
    replayed = [u for u in loaded["updates"] if u.get("sessionUpdate") in CHUNKS]
    assert all("messageId" in update for update in replayed)
    users = [u["messageId"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert len(set(users)) == 2 and not set(users) & set(ids)
    # A second load gives the same ids again.
    assert _replies(_load(door, session)["updates"]) == live


def test_after_compact_the_ids_start_afresh_and_a_load_replays_them(door: Door) -> None:
    door.write_agents(first=door.llm(tools=[], environment=False))
    summaries(door.sim)
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(3)), Reply.text("after"))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(3)),
        prompt(text("/compact")),
        prompt(text("and now?")),
    )
    session = steps[1]["result"]["sessionId"]
    before = {message for turn in steps[2:5] for message, _ in _replies(turn["updates"])}
    ((after, said),) = _replies(steps[-1]["updates"])
    assert said == "after" and after not in before
    assert (after, "after") in _replies(_load(door, session)["updates"])


def test_a_compaction_during_a_turn_keeps_the_ids_a_load_replays(door: Door) -> None:
    summaries(door.sim)
    door.sim.count_tokens = provider_tokens()
    door.write_agents(first=door.llm(contextWindow=1_500, maxTokens=150))
    door.sim.script(*(Reply.text(f"answer {n}: {WORDS}") for n in range(8)))
    steps = door.run(
        initialize(),
        new_session(door.cwd),
        *(prompt(text(f"question {n}: {WORDS}")) for n in range(8)),
    )
    session = steps[1]["result"]["sessionId"]
    live = [reply for turn in steps[2:] for reply in _replies(turn["updates"])]
    assert len({message for message, _ in live}) == 8
    replayed = _replies(_load(door, session)["updates"])
    # The replies the compactions kept are replayed with the ids they streamed with.
    assert replayed and set(replayed) <= set(live)
    assert replayed == live[-len(replayed) :]
