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
        # storePayloads "none" (the default) holds for judges too: no content.
        assert "polite" in prompt and "[string input omitted; 6 characters]" in prompt
        assert "please" not in prompt


def test_a_judge_config_that_cannot_run_is_refused_when_built() -> None:
    judge = {"name": "judge", "provider": "no-such-provider", "model": "m"}
    scorer = {"kind": "judge", "config": judge, "criteria": "c"}
    with pytest.raises(InvalidParamsError) as caught:
        OpenMultiAgent(evaluation={"sample": 1, "scorers": [scorer]})
    assert str(caught.value).startswith("initializationOptions.evaluation.scorers[0].config")
    assert "no-such-provider" in str(caught.value)


@pytest.mark.parametrize(("mode", "score"), [("none", 0.0), ("redacted", 1.0), ("full", 1.0)])
async def test_built_in_scorers_are_given_what_store_payloads_allows(
    mode: str, score: float
) -> None:
    """A ``contains`` scorer reads the output as the mode gives it: under
    ``none``, only the description, so the text it looks for is not there."""
    oma = OpenMultiAgent(
        evaluation={
            "sample": 1,
            "storePayloads": mode,
            "scorers": [{"kind": "contains", "text": "needle"}],
        }
    )
    result = await oma.run_agent(ECHO, "a needle in a haystack")
    assert isinstance(oma.evaluator, OnlineEvaluator)
    assert await oma.evaluator.flush(10)
    (record,) = oma.store.records(result["identity"]["runId"])
    assert record["score"] == score
    if mode == "none":
        assert record["output"] == f"[string output omitted; {len(result['output'])} characters]"


async def test_a_lone_surrogate_is_stored_escaped_not_lost() -> None:
    # The wire refuses a lone surrogate; Python callers can still pass one.
    oma = OpenMultiAgent(
        evaluation={"sample": 1, "storePayloads": "full", "scorers": [{"kind": "length"}]}
    )
    result = await oma.run_agent(ECHO, [user(text("a\ud800b"))])
    assert isinstance(oma.evaluator, OnlineEvaluator)
    assert await oma.evaluator.flush(10)
    assert oma.evaluator.stats.store_failed == 0
    (record,) = oma.store.records(result["identity"]["runId"])
    assert record["input"] == '[{"role":"user","content":[{"type":"text","text":"a\\ud800b"}]}]'
