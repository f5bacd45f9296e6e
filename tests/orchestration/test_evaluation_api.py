"""Online evaluation through the Python API: OpenMultiAgent(evaluation=...)."""

from __future__ import annotations

import json

import pytest

from oma_host import InvalidParamsError, OpenMultiAgent
from oma_host.orchestration.evaluation import OnlineEvaluator
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import text, user

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


async def test_python_api_builds_the_evaluator_and_keeps_records() -> None:
    oma = OpenMultiAgent(
        evaluation={"sample": 1, "storePayloads": "full", "scorers": [{"kind": "length", "min": 1}]}
    )
    assert isinstance(oma.evaluator, OnlineEvaluator)
    messages = [user(text("hi"))]
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


async def test_a_judge_scorer_scores_a_run_with_the_model_defaults() -> None:
    with Simulator() as sim:
        # The judge names neither provider nor model: OpenMultiAgent's defaults fill them in.
        judge = {"name": "judge", "apiKey": "judge-key-123456"}
        oma = OpenMultiAgent(
            defaults={"provider": "anthropic", "model": "judge-model", "baseURL": sim.base_url},
            evaluation={
                "sample": 1,
                "scorers": [{"kind": "judge", "config": judge, "criteria": "polite"}],
            },
        )
        assert isinstance(oma.evaluator, OnlineEvaluator)
        sim.script(Reply.text('{"score": 0.8, "reason": "polite enough"}'))
        result = await oma.run_agent(ECHO, "please")
        assert await oma.evaluator.flush(10)
        assert oma.evaluator.stats.to_json()["completed"] == 1
        (record,) = oma.store.records(result["identity"]["runId"])
        assert record["score"] == 0.8 and record["reason"] == "polite enough"
        (request,) = sim.requests
        assert request.body["model"] == "judge-model"
        prompt = request.body["messages"][0]["content"][0]["text"]
        assert "polite" in prompt and "please" in prompt


def test_a_judge_config_that_cannot_run_is_refused_when_built() -> None:
    judge = {"name": "judge", "provider": "no-such-provider", "model": "m"}
    scorer = {"kind": "judge", "config": judge, "criteria": "c"}
    with pytest.raises(InvalidParamsError) as caught:
        OpenMultiAgent(evaluation={"sample": 1, "scorers": [scorer]})
    assert str(caught.value).startswith("initializationOptions.evaluation.scorers[0].config")
    assert "no-such-provider" in str(caught.value)
