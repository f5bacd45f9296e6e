"""Context compaction through the real host and the provider simulator: a
session driven past a small ``contextWindow`` keeps answering within it and
a second host restores it compacted; a provider's "too long" answer (each
provider's own) is compacted and sent again; images of summarised turns are
listed; ``agent/compact``; sliding-window; ``off``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from oma_host.server.app import SessionOptions
from oma_host.testing.simulator import Reply, Simulator, too_long_fault
from tests.builders import assistant, image, reply, text, tool_use, user
from tests.llm.compaction_helpers import (
    SUMMARY_HEADING,
    first_text,
    is_summary_request,
    posts,
    provider_tokens,
    summaries,
    turn_requests,
)
from tests.providers.conftest import ANTHROPIC_KEY, OPENAI_KEY
from tests.providers.gemini_bedrock import gb_config, host_env
from tests.providers.helpers import PNG, llm_config
from tests.server.helpers import InProcessFactory, expect_error

WINDOW = 3_000
WORDS = "the quick brown fox jumps over the lazy dog " * 6


@pytest.fixture
async def host(serve_host: InProcessFactory, tmp_path: Path) -> HostClient:
    return await _serve(serve_host, tmp_path / "state")


async def _serve(serve_host: InProcessFactory, state: Path) -> HostClient:
    """A host keeping its sessions in ``state``: a second one restores them."""
    env = host_env(ANTHROPIC_API_KEY=ANTHROPIC_KEY, OPENAI_API_KEY=OPENAI_KEY)
    return await serve_host(SessionOptions(framing="auto", state_dir=str(state)), env=env)


def _config(sim: Simulator, provider: str = "anthropic", **extra: Any) -> dict[str, Any]:
    if provider in ("gemini", "bedrock"):
        return gb_config(sim, provider, **extra)
    return llm_config(sim, provider, **extra)


async def _agent(host: HostClient, config: dict[str, Any], session: str | None = None) -> str:
    params: dict[str, Any] = {"config": config}
    if session is not None:
        params["sessionId"] = session
    agent_id: str = (await host.request("agent/create", params))["agentId"]
    return agent_id


async def _prompt(host: HostClient, agent: str, said: Any, token: str) -> dict[str, Any]:
    result: dict[str, Any] = await host.request(
        "agent/prompt", {"agentId": agent, "input": said, "partialResultToken": token}
    )
    return result


def _compactions(host: HostClient, token: str) -> list[dict[str, Any]]:
    return [event["data"] for event in host.progress(token) if event["type"] == "compaction"]


def _history(turns: int) -> list[dict[str, Any]]:
    """``turns`` questions and answers, each some 80 tokens."""
    messages: list[dict[str, Any]] = []
    for number in range(turns):
        messages.append(user(text(f"question {number}: {WORDS}")))
        messages.append(assistant(text(f"answer {number}: {WORDS}")))
    return messages


async def test_a_session_past_a_small_window_keeps_answering_and_a_second_host_restores_it(
    sim: Simulator, tmp_path: Path, serve_host: InProcessFactory
) -> None:
    count = provider_tokens()
    sim.count_tokens, sim.context_limit = count, WINDOW  # the provider refuses past it
    given = summaries(sim)
    host = await _serve(serve_host, tmp_path / "state")
    config = _config(sim, contextWindow=WINDOW, maxTokens=300)
    agent = await _agent(host, config, session="chat-1")
    events: list[tuple[int, dict[str, Any]]] = []
    for number in range(24):
        requests_before = len(turn_requests(sim))
        result = await _prompt(host, agent, f"question {number}: {WORDS}", f"t{number}")
        assert result["success"] is True, result
        events += [(requests_before, event) for event in _compactions(host, f"t{number}")]
    assert len(events) >= 2 and all(event["trigger"] == "threshold" for _, event in events)
    assert [event["strategy"] for _, event in events] == ["summarize"] * len(events)
    for _, event in events:
        assert event["after"] < event["before"] and event["tokensAfter"] < event["tokensBefore"]
    # The provider never received more than its window, and took every request.
    assert max(count(request) for request in posts(sim)) <= WINDOW
    # The request after each compaction opens with the summary the model wrote.
    turns = turn_requests(sim)
    for (index, _), summary in zip(events, given, strict=True):
        opening = first_text(turns[index])
        assert opening.startswith(SUMMARY_HEADING) and summary in opening
    # Each compaction is announced first, under the id its end carries, with
    # the summary the model wrote.
    for (_, event), summary in zip(events, given, strict=True):
        assert event["summary"] == summary
    lifecycle = [
        (event["type"], event["data"]["id"])
        for number in range(24)
        for event in host.progress(f"t{number}")
        if event["type"].startswith("compaction")
    ]
    ids = [event["id"] for _, event in events]
    assert lifecycle == [(kind, i) for i in ids for kind in ("compaction_started", "compaction")]
    await host.close()

    second = await _serve(serve_host, tmp_path / "state")
    restored = await _agent(second, config, session="chat-1")
    history = (await second.request("agent/history", {"agentId": restored}))["messages"]
    assert history[0]["content"][0]["text"].startswith(SUMMARY_HEADING)
    assert given[-1] in history[0]["content"][0]["text"]
    assert len(history) < 2 * 24
    result = await _prompt(second, restored, "and now?", "after")
    assert result["success"] is True
    assert given[-1] in first_text(turn_requests(sim)[-1])
    await second.close()


@pytest.mark.parametrize(
    "provider", ["anthropic", "openai", "openai-responses", "gemini", "bedrock"]
)
async def test_a_too_long_answer_is_compacted_and_sent_again(
    host: HostClient, sim: Simulator, provider: str
) -> None:
    given = summaries(sim)
    wire = "openai" if provider == "openai" else provider
    agent = await _agent(host, _config(sim, provider, history=_history(3)))
    sim.script(too_long_fault(wire), Reply.text("answered at last"))
    result = await _prompt(host, agent, "one more question", "t")
    assert result["success"] is True and result["output"] == "answered at last"
    (event,) = _compactions(host, "t")
    assert event["trigger"] == "too_long" and event["before"] == 7
    refused, *summarising, retried = posts(sim)
    assert summarising and all(is_summary_request(request) for request in summarising)
    assert not is_summary_request(refused) and not is_summary_request(retried)
    assert given[-1] in json.dumps(retried.body) and given[-1] not in json.dumps(refused.body)
    assert "question 0" not in json.dumps(retried.body)
    assert "one more question" in json.dumps(retried.body)
    # The history the agent keeps is the compacted one, the turn at its end.
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert history[0]["content"][0]["text"].startswith(SUMMARY_HEADING)
    assert history[-1] == {"role": "assistant", "content": [text("answered at last")]}


async def test_off_leaves_the_too_long_answer_a_failed_turn(
    host: HostClient, sim: Simulator
) -> None:
    agent = await _agent(host, _config(sim, history=_history(3), context={"strategy": "off"}))
    sim.script(too_long_fault("anthropic"))
    result = await _prompt(host, agent, "one more question", "t")
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "context_too_long"
    assert "prompt is too long" in result["status"]["message"]
    assert len(posts(sim)) == 1 and _compactions(host, "t") == []
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert len(history) == 6


async def test_an_image_in_a_summarised_turn_is_sent_to_the_summary_and_listed(
    host: HostClient, sim: Simulator
) -> None:
    given = summaries(sim)
    history = [
        user(text("what is in this picture?"), image(PNG)),
        assistant(text("a red square")),
        *_history(2),
    ]
    agent = await _agent(host, _config(sim, history=history))
    answer = await host.request("agent/compact", {"agentId": agent})
    assert answer["compacted"] is True
    compaction = answer["compaction"]
    assert compaction["trigger"] == "request" and compaction["strategy"] == "summarize"
    assert compaction["images"] == [
        {"kind": "image", "message": 0, "block": 1, "mediaType": "image/png"}
    ]
    # The summary request showed the model the image itself.
    (summary_request,) = posts(sim)
    blocks = summary_request.body["messages"][0]["content"]
    assert {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
    } in [
        {key: value for key, value in block.items() if key != "cache_control"} for block in blocks
    ]
    kept = (await host.request("agent/history", {"agentId": agent}))["messages"]
    summary = kept[0]["content"][0]["text"]
    assert given[0] in summary and "image image/png in messages[0].content[1]" in summary
    # The last turn stays as it was, after the summary; nothing holds the image.
    assert kept[0]["content"][1:] == [text(f"question 1: {WORDS}")]
    assert kept[1:] == [assistant(text(f"answer 1: {WORDS}"))]
    assert PNG not in json.dumps(kept)


async def test_agent_compact_compacts_on_request_or_says_why_not(
    sim: Simulator, tmp_path: Path, serve_host: InProcessFactory
) -> None:
    summaries(sim)
    host = await _serve(serve_host, tmp_path / "state")
    config = _config(sim, history=_history(1), pricing={"input": 3, "output": 15})
    agent = await _agent(host, config, session="s")
    empty = await host.request("agent/compact", {"agentId": await _agent(host, _config(sim))})
    assert empty["compacted"] is False
    assert empty["reason"] == "nothing to compact: the conversation is empty"
    assert empty["tokenUsage"] == {"input_tokens": 0, "output_tokens": 0}
    nothing = await host.request("agent/compact", {"agentId": agent})
    assert nothing["compacted"] is False and "nothing to compact" in nothing["reason"]
    assert nothing["tokenUsage"] == {"input_tokens": 0, "output_tokens": 0} and posts(sim) == []
    for number in range(2):
        await host.request("agent/prompt", {"agentId": agent, "input": f"more {number}"})
    done = await host.request("agent/compact", {"agentId": agent})
    assert done["compacted"] is True and done["compaction"]["before"] == 6
    assert done["compaction"]["after"] == 2 and done["tokenUsage"]["input_tokens"] == 10
    assert done["cost"]["amount"] > 0
    state = await host.request("agent/state", {"agentId": agent})
    assert state["tokenUsage"]["input_tokens"] == 30  # two turns and the summary
    process = await _agent(host, {"name": "p", "backend": {"kind": "process", "command": "cat"}})
    error = await expect_error(
        host.request("agent/compact", {"agentId": process}), -32602, "InvalidParams"
    )
    assert "only an LLM agent's history can be compacted" in error.message
    await host.close()
    second = await _serve(serve_host, tmp_path / "state")
    restored = await _agent(second, config, session="s")
    history = (await second.request("agent/history", {"agentId": restored}))["messages"]
    assert len(history) == 2 and history[0]["content"][0]["text"].startswith(SUMMARY_HEADING)
    await second.close()


async def test_a_failed_summary_request_is_a_backend_error_and_changes_nothing(
    host: HostClient, sim: Simulator
) -> None:
    from oma_host.testing.simulator import Fault

    agent = await _agent(host, _config(sim, history=_history(3)))
    sim.script(Fault(400, "no summaries today"))
    error = await expect_error(
        host.request("agent/compact", {"agentId": agent}), -32004, "BackendError"
    )
    assert "no summaries today" in error.message and error.data["kind"] == "provider"
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert history == _history(3)


async def test_sliding_window_drops_the_oldest_turns_and_names_them(
    host: HostClient, sim: Simulator
) -> None:
    count = provider_tokens()
    sim.count_tokens = count
    history = [user(text("look"), image(PNG)), assistant(text("a square")), *_history(6)]
    config = _config(
        sim,
        history=history,
        contextWindow=2_000,
        maxTokens=200,
        context={"strategy": "sliding-window", "keepTurns": 2},
    )
    agent = await _agent(host, config)
    result = await _prompt(host, agent, "the newest question", "t")
    assert result["success"] is True
    (event,) = _compactions(host, "t")
    assert event["strategy"] == "sliding-window" and event["trigger"] == "threshold"
    assert [turn["message"] for turn in event["dropped"]] == [0, 2, 4, 6, 8, 10]
    assert event["dropped"][0]["text"] == "look"
    assert event["dropped"][1]["text"].startswith("question 0: the quick brown fox")
    assert event["images"] == [
        {"kind": "image", "message": 0, "block": 1, "mediaType": "image/png"}
    ]
    # No summary was asked for: the request holds the last two turns alone.
    (sent,) = posts(sim)
    assert [message["role"] for message in sent.body["messages"]] == ["user", "assistant", "user"]
    assert first_text(sent) == f"question 5: {WORDS}"
    assert event["after"] == 3 and count(sent) < 2_000


async def test_a_long_turn_is_cut_between_tool_calls_never_inside_one(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    given = summaries(sim)
    count = provider_tokens()
    sim.count_tokens = count
    for n in range(8):  # another file each time: the same call again would be a loop
        (tmp_path / f"notes{n}.txt").write_text(WORDS * 4)
    config = _config(
        sim, tools=["file_read"], cwd=str(tmp_path), contextWindow=2_500, maxTokens=200
    )
    agent = await _agent(host, config)
    calls = [reply(tool_use(f"call_{n}", "file_read", path=f"notes{n}.txt")) for n in range(8)]
    sim.script(*calls, Reply.text("read it all"))
    result = await _prompt(host, agent, "read the eight notes", "t")
    assert result["success"] is True and result["output"] == "read it all", result
    events = _compactions(host, "t")
    assert events and given
    for request in turn_requests(sim):
        messages = request.body["messages"]
        used = {b["id"] for m in messages for b in m["content"] if b.get("type") == "tool_use"}
        answered = {
            b["tool_use_id"]
            for m in messages
            for b in m["content"]
            if b.get("type") == "tool_result"
        }
        # Every result sent goes with its call, and the call being answered is there.
        assert answered <= used and messages[-1]["role"] == "user"
        assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + [
            "user"
        ]
        assert count(request) <= 2_500
    # The kept history ends with the whole turn's last calls and the answer.
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert history[0]["content"][0]["text"].startswith(SUMMARY_HEADING)
    assert history[-1] == assistant(text("read it all"))


async def test_the_history_keeps_the_callers_turn_when_a_hook_rewrote_what_was_compacted(
    host: HostClient, sim: Simulator
) -> None:
    given = summaries(sim)
    host.handlers["agent/beforeRun"] = lambda params: {"prompt": "REWRITTEN"}
    config = _config(sim, history=_history(3), hooks={"beforeRun": True})
    agent = await _agent(host, config)
    sim.script(too_long_fault("anthropic"), Reply.text("answered"))
    result = await _prompt(host, agent, "the caller's own words", "t")
    assert result["success"] is True
    # The model saw the rewrite after the summary; the history keeps the turn as sent.
    retried = turn_requests(sim)[-1].body["messages"]
    assert given[-1] in retried[0]["content"][0]["text"]
    assert retried[-1]["content"][-1]["text"] == "REWRITTEN"
    history = (await host.request("agent/history", {"agentId": agent}))["messages"]
    assert given[-1] in history[0]["content"][0]["text"]
    assert history[-2] == user(text("the caller's own words"))
    assert history[-1] == assistant(text("answered"))
    assert len(history) == len(retried) + 1
