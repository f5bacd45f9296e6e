"""Online evaluation of ``oma/runAgent`` results (docs/protocol.md, "Online evaluation")."""

from oma_host.orchestration.evaluation.config import (
    EvaluationConfig,
    check_judges,
    parse_evaluation_config,
)
from oma_host.orchestration.evaluation.evaluator import OnlineEvaluator, Stats
from oma_host.orchestration.evaluation.sample import EvaluationSample, Evaluator

__all__ = [
    "EvaluationConfig",
    "EvaluationSample",
    "Evaluator",
    "OnlineEvaluator",
    "Stats",
    "check_judges",
    "parse_evaluation_config",
]
