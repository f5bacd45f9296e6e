"""Online evaluation of ``oma/runAgent`` results
(docs/protocol.md, "Online evaluation").

config      EvaluationConfig and the scorer models (``initializationOptions.evaluation``)
sample      EvaluationSample and the Evaluator protocol runs hand samples to
scorers     the scorers that read only the output; reading any scorer's answer
judge       the judge scorer: an LLM agent built with the model defaults
evaluator   OnlineEvaluator: the bounded queue, its workers, stats and records
"""

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
