"""What a run hands the online evaluator (:class:`EvaluationSample`, :class:`Evaluator`).

OpenMultiAgent depends on these two only, not on the evaluator that scores
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from oma_host.core.messages import LLMMessage
from oma_host.core.results import AgentRunResult


@dataclass(frozen=True)
class EvaluationSample:
    """What the online evaluator receives for one run. ``input`` is the string
    for a string call and the evaluator's own copy of the messages for a
    structured call; what scorers are given of it depends on
    ``storePayloads`` (see :mod:`oma_host.orchestration.evaluation.payloads`)."""

    run_id: str
    agent: str
    input: str | list[LLMMessage]
    output: str
    result: AgentRunResult
    metadata: dict[str, Any] = field(default_factory=dict)
    # The run's known secret values, so stored payloads can leave them out.
    secrets: tuple[str, ...] = ()


class Evaluator(Protocol):
    """The online evaluator's entry point. ``submit`` must not block or raise
    into the run: evaluation never changes or delays a result."""

    def submit(self, sample: EvaluationSample) -> None: ...
