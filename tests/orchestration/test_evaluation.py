"""Online evaluation over the wire (docs/protocol.md, "Online evaluation"):
what scorers receive, what records keep in each storePayloads mode, the
bounded queue, and that evaluation never changes or delays a run's result."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError, host_argv
from oma_host.testing.simulator import Reply, Simulator

ECHO = {"name": "echo", "provider": "test", "model": "echo"}
KEY = "sk-ant-api03-evaluation-key-never-stored-123456"


async def spawn(evaluation: dict[str, Any]) -> HostClient:
    client = await HostClient.spawn(host_argv("--state-dir", ":memory:"))
    await client.initialize({"evaluation": evaluation})
    return client


async def flush(client: HostClient) -> dict[str, Any]:
    result: dict[str, Any] = await client.request("oma/evaluation/flush", {"timeoutMs": 20000})
    assert result["settled"] is True
    return result


async def records(client: HostClient, run_id: str | None = None) -> list[dict[str, Any]]:
    params = {"runId": run_id} if run_id else {}
    found: list[dict[str, Any]] = (await client.request("oma/evaluation/records", params))[
        "records"
    ]
    return found


async def test_the_seed_scenario_string_and_structured_runs() -> None:
    client = await spawn(
        {"sample": 1, "storePayloads": "full", "scorers": [{"kind": "contains", "text": "hello"}]}
    )
    try:
        text_run = await client.request(
            "oma/runAgent", {"config": ECHO, "input": "hello there", "progress": True}
        )
        messages = [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
        ]
        structured_run = await client.request(
            "oma/runAgent", {"config": ECHO, "input": messages, "progress": True}
        )
        starts = [
            n["params"]["data"]
            for n in client.notifications
            if n["method"] == "oma/progress" and n["params"]["type"] == "agent_start"
        ]
        # The string run's progress keeps {prompt}; the structured one carries the messages.
        assert starts == [{"prompt": "hello there"}, {"messages": messages}]
        stats = await flush(client)
        assert stats["sampled"] == 2 and stats["completed"] == 2
        text_records = await records(client, text_run["identity"]["runId"])
        assert text_records[0]["input"] == "hello there"
        structured_records = await records(client, structured_run["identity"]["runId"])
        assert json.loads(structured_records[0]["input"]) == messages
        assert structured_records[0]["output"] == structured_run["output"]
        assert structured_records[0]["scorer"] == "contains"
        # Execution got its own copy: the provider saw exactly the caller's messages.
        assert json.loads(structured_run["output"])["messages"] == messages
        # Invalid external structured input is refused before any sample.
        with pytest.raises(RpcError) as caught:
            await client.request(
                "oma/runAgent",
                {
                    "config": {"name": "p", "backend": {"kind": "process", "command": "cat"}},
                    "input": messages,
                },
            )
        assert caught.value.code == -32602
        assert (await client.request("oma/evaluation/stats", {}))["sampled"] == 2
    finally:
        await client.close()


async def test_invalid_external_structured_input_leaves_sampled_at_zero() -> None:
    client = await spawn({"sample": 1, "scorers": [{"kind": "length", "min": 1}]})
    try:
        with pytest.raises(RpcError):
            await client.request(
                "oma/runAgent",
                {
                    "config": {"name": "p", "backend": {"kind": "process", "command": "cat"}},
                    "input": [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
                },
            )
        stats = await client.request("oma/evaluation/stats", {})
        assert stats == {
            "sampled": 0,
            "enqueued": 0,
            "completed": 0,
            "dropped": 0,
            "failed": 0,
            "storeFailed": 0,
        }
    finally:
        await client.close()


MARKER = "\n[truncated at 8192 characters]"
GITHUB = "ghp_" + "A" * 36


@pytest.mark.parametrize("mode", ["none", "redacted", "full"])
async def test_a_client_scorer_is_given_what_store_payloads_allows(mode: str) -> None:
    """What the client scorer receives is exactly what the record keeps: a
    content-free description (none), or compact JSON with non-ASCII kept,
    bounded to 8,192 characters with the marker inside the bound, redacted
    (redacted) or not (full); the agent's own key never."""
    client = await spawn(
        {"sample": 1, "storePayloads": mode, "scorers": [{"kind": "client", "name": "spy"}]}
    )
    seen: list[dict[str, Any]] = []

    def spy(params: dict[str, Any]) -> dict[str, Any]:
        seen.append(params)
        return {"score": 0.5, "reason": "é" * 3000}

    client.handlers["oma/evaluation/score"] = spy
    try:
        messages = [
            {"role": "user", "content": [{"type": "text", "text": f"{KEY} password=hunter2"}]},
            {"role": "assistant", "content": [{"type": "text", "text": f"café {GITHUB}"}]},
            {"role": "user", "content": [{"type": "text", "text": "いろは" * 5000}]},
        ]
        config = {**ECHO, "apiKey": KEY}
        run = await client.request("oma/runAgent", {"config": config, "input": messages})
        await flush(client)
        (params,) = seen
        assert params["scorer"] == "spy" and params["runId"] == run["identity"]["runId"]
        (record,) = await records(client, run["identity"]["runId"])
        assert (record["input"], record["output"]) == (params["input"], params["output"])
        assert record["score"] == 0.5
        assert len(record["reason"].encode()) <= 1024 and record["reason"].startswith("éé")
        if mode == "none":
            assert params["input"] == "[array input omitted; 3 items]"
            output = f"[string output omitted; {len(run['output'])} characters]"
            assert params["output"] == output
        else:
            for payload in (params["input"], params["output"]):
                assert len(payload) == 8192 and payload.endswith(MARKER)
            secret, token = (
                ("[redacted]", "[redacted]") if mode == "redacted" else ("hunter2", GITHUB)
            )
            assert params["input"].startswith(
                '[{"role":"user","content":[{"type":"text",'
                f'"text":"[redacted] password={secret}"}}]}},'
                '{"role":"assistant","content":[{"type":"text",'
                f'"text":"café {token}"}}]}},'
                '{"role":"user","content":[{"type":"text","text":"いろはいろは'
            )
        assert KEY not in json.dumps(await records(client)) + json.dumps(seen)
    finally:
        await client.close()


async def test_a_string_input_is_given_as_it_is_and_its_description_counts_characters() -> None:
    client = await spawn(
        {"sample": 1, "storePayloads": "none", "scorers": [{"kind": "client", "name": "spy"}]}
    )
    seen: list[dict[str, Any]] = []
    client.handlers["oma/evaluation/score"] = lambda params: seen.append(params) or {"score": 1}
    try:
        await client.request("oma/runAgent", {"config": ECHO, "input": "hello there"})
        await flush(client)
        assert seen[0]["input"] == "[string input omitted; 11 characters]"
    finally:
        await client.close()


async def test_queue_overflow_is_dropped_and_counted_and_runs_are_not_delayed() -> None:
    client = await spawn(
        {
            "sample": 1,
            "maxQueueLength": 1,
            "maxConcurrent": 1,
            "scorers": [{"kind": "client", "name": "slow"}],
        }
    )
    release = asyncio.Event()
    calls: list[str] = []

    async def slow(params: dict[str, Any]) -> Any:
        calls.append(params["runId"])
        await release.wait()
        return {"score": 1}

    client.handlers["oma/evaluation/score"] = slow
    try:
        runs = [
            await client.request("oma/runAgent", {"config": ECHO, "input": f"run {n}"})
            for n in range(5)
        ]
        # Every run answered while the first score was still unanswered.
        assert all(run["success"] for run in runs)
        stats = await client.request("oma/evaluation/stats", {})
        assert stats["sampled"] == 5
        assert stats["enqueued"] == 2  # one being scored, one waiting
        assert stats["dropped"] == 3
        release.set()
        stats = await flush(client)
        assert stats["completed"] == 2 and stats["failed"] == 0
    finally:
        release.set()
        await client.close()


async def test_scorer_errors_and_timeouts_are_counted_not_raised() -> None:
    client = await spawn(
        {
            "sample": 1,
            # Below the hanging scorer's 5 s; room for the json scorer's first
            # validation on a loaded machine (300 ms timed it out under xdist).
            "timeoutMs": 2000,
            "storePayloads": "full",  # the regex and json scorers read the real output
            "scorers": [
                {"kind": "client", "name": "broken"},
                {"kind": "regex", "pattern": "messages"},
                {"kind": "json", "schema": {"type": "object", "required": ["messages"]}},
            ],
        }
    )
    answers = iter(["raise", "hang"])

    async def scorer(params: dict[str, Any]) -> Any:
        what = next(answers)
        if what == "raise":
            raise RuntimeError("scorer exploded")
        await asyncio.sleep(5)
        return {"score": 1}

    client.handlers["oma/evaluation/score"] = scorer
    try:
        for _ in range(2):
            run = await client.request("oma/runAgent", {"config": ECHO, "input": "x"})
            assert run["success"]
        stats = await flush(client)
        assert stats["failed"] == 2 and stats["completed"] == 0
        stored = await records(client)
        # The scorers that did answer are kept: regex and json, twice.
        assert sorted(r["scorer"] for r in stored) == ["json", "json", "regex", "regex"]
        assert all(r["score"] == 1.0 for r in stored)
    finally:
        await client.close()


async def test_judge_scorer_runs_an_llm_agent() -> None:
    with Simulator() as sim:
        judge = {
            "name": "judge",
            "provider": "anthropic",
            "model": "judge-model",
            "baseURL": sim.base_url,
            "apiKey": "judge-key-123456",
        }
        client = await spawn(
            {"sample": 1, "scorers": [{"kind": "judge", "config": judge, "criteria": "polite"}]}
        )
        try:
            sim.script(Reply.text('{"score": 0.8, "reason": "polite enough"}'))
            run = await client.request("oma/runAgent", {"config": ECHO, "input": "please"})
            await flush(client)
            (record,) = await records(client, run["identity"]["runId"])
            assert record["score"] == 0.8 and record["reason"] == "polite enough"
            prompt = sim.requests[0].body["messages"][0]["content"][0]["text"]
            # storePayloads "none" (the default) holds for judges too: no content.
            assert "polite" in prompt and "[string input omitted; 6 characters]" in prompt
            assert "please" not in prompt
        finally:
            await client.close()


async def test_bad_evaluation_config_is_refused_at_initialize() -> None:
    client = await HostClient.spawn()
    try:
        with pytest.raises(RpcError) as caught:
            await client.initialize({"evaluation": {"sample": 2, "scorers": []}})
        assert caught.value.code == -32602 and "sample" in caught.value.message
    finally:
        client.process.kill()
        await client.wait()
