"""Online evaluation through the Python API: OpenMultiAgent(evaluation=...)."""

from __future__ import annotations

import json

from oma_host import OpenMultiAgent
from oma_host.orchestration.evaluation import OnlineEvaluator

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


async def test_python_api_builds_the_evaluator_and_keeps_records() -> None:
    oma = OpenMultiAgent(
        evaluation={"sample": 1, "storePayloads": "full", "scorers": [{"kind": "length", "min": 1}]}
    )
    assert isinstance(oma.evaluator, OnlineEvaluator)
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    result = await oma.run_agent(ECHO, messages)
    assert await oma.evaluator.flush(10)
    (record,) = oma.store.records(result["identity"]["runId"])
    assert json.loads(record["input"]) == messages
    assert record["score"] == 1.0
    assert oma.evaluator.stats.to_json()["completed"] == 1


async def test_evaluation_sample_zero_samples_nothing() -> None:
    oma = OpenMultiAgent(evaluation={"sample": 0, "scorers": [{"kind": "length"}]})
    await oma.run_agent(ECHO, "x")
    assert isinstance(oma.evaluator, OnlineEvaluator)
    assert oma.evaluator.stats.sampled == 0
