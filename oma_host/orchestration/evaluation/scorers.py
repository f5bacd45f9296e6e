"""The scorers that need only the output, and how any scorer's answer becomes a :class:`Score`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from oma_host.core.patterns import Pattern
from oma_host.orchestration.evaluation.config import (
    ContainsScorer,
    JsonScorer,
    LengthScorer,
    RegexScorer,
)

LocalScorer = LengthScorer | ContainsScorer | RegexScorer | JsonScorer


@dataclass
class Score:
    score: float
    reason: str = ""


def score_locally(scorer: LocalScorer, output: str) -> Score:
    if isinstance(scorer, LengthScorer):
        return _score_length(scorer, output)
    if isinstance(scorer, ContainsScorer):
        found = scorer.text in output
        return Score(1.0 if found else 0.0, f"{'contains' if found else 'lacks'} {scorer.text!r}")
    if isinstance(scorer, RegexScorer):
        match = Pattern(scorer.pattern).search(output)
        return Score(1.0 if match else 0.0, "matches" if match else "no match")
    return _score_json(scorer, output)


def _score_length(scorer: LengthScorer, output: str) -> Score:
    size = len(output)
    if scorer.min is not None and size < scorer.min:
        return Score(0.0, f"{size} characters, under the minimum of {scorer.min}")
    if scorer.max is not None and size > scorer.max:
        return Score(0.0, f"{size} characters, over the maximum of {scorer.max}")
    return Score(1.0, f"{size} characters")


def _score_json(scorer: JsonScorer, output: str) -> Score:
    try:
        value = json.loads(output)
    except ValueError as error:
        return Score(0.0, f"not valid JSON: {error}")
    if scorer.schema_ is None:
        return Score(1.0, "valid JSON")
    import jsonschema

    validator = jsonschema.validators.validator_for(scorer.schema_)(scorer.schema_)
    mismatch = next(iter(validator.iter_errors(value)), None)
    if mismatch is not None:
        return Score(0.0, f"does not match the schema: {mismatch.message}")
    return Score(1.0, "valid JSON matching the schema")


def read_score(answer: Any, who: str) -> Score:
    """A ``{score: number, reason?: string}`` answer (a client's or a judge's)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("score"), int | float):
        raise ValueError(f"{who} answered without a numeric score: {str(answer)[:200]}")
    reason = answer.get("reason")
    return Score(float(answer["score"]), reason if isinstance(reason, str) else "")
