"""``initializationOptions.evaluation``: the EvaluationConfig and scorer models, checked once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from oma_host.core.config import ModelDefaults, parse_agent_config, parse_model_defaults
from oma_host.core.errors import InvalidParamsError
from oma_host.core.patterns import Pattern, PatternError
from oma_host.core.plugins import check_agent_config
from oma_host.core.validation import describe_validation_error
from oma_host.orchestration.evaluation.payloads import StorePayloads

WHERE = "initializationOptions.evaluation"


class _Scorer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str | None = None


class LengthScorer(_Scorer):
    kind: Literal["length"]
    min: int | None = None
    max: int | None = None


class ContainsScorer(_Scorer):
    kind: Literal["contains"]
    text: str


class RegexScorer(_Scorer):
    kind: Literal["regex"]
    pattern: str

    @model_validator(mode="after")
    def _compiles(self) -> RegexScorer:
        try:
            Pattern(self.pattern)
        except PatternError as error:
            raise ValueError(f"pattern is not one RE2 can run: {error}") from None
        return self


class JsonScorer(_Scorer):
    kind: Literal["json"]
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")


class JudgeScorer(_Scorer):
    kind: Literal["judge"]
    config: dict[str, Any]
    criteria: str


class ClientScorer(_Scorer):
    kind: Literal["client"]
    name: str  # required here: it names the client's scorer


_SCORERS = (LengthScorer, ContainsScorer, RegexScorer, JsonScorer, JudgeScorer, ClientScorer)
Scorer = Annotated[
    LengthScorer | ContainsScorer | RegexScorer | JsonScorer | JudgeScorer | ClientScorer,
    Field(discriminator="kind"),
]
# The tags of that union, which pydantic puts into error locations.
_SCORER_KINDS = frozenset(
    kind for model in _SCORERS for kind in get_args(model.model_fields["kind"].annotation)
)


class EvaluationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    sample: Annotated[float, Field(ge=0, le=1)] = 0
    store_payloads: StorePayloads = Field(default="none", alias="storePayloads")
    scorers: list[Scorer] = Field(default_factory=list)
    max_concurrent: Annotated[int, Field(ge=1)] = Field(default=1, alias="maxConcurrent")
    max_queue_length: Annotated[int, Field(ge=0)] = Field(default=100, alias="maxQueueLength")
    timeout_ms: Annotated[int, Field(gt=0)] = Field(default=30_000, alias="timeoutMs")


def parse_evaluation_config(raw: Any) -> EvaluationConfig:
    try:
        return EvaluationConfig.model_validate(raw)
    except ValidationError as error:
        raise InvalidParamsError(
            describe_validation_error(error, WHERE, _SCORER_KINDS, EvaluationConfig)
        ) from None


def check_judges(
    config: EvaluationConfig, defaults: ModelDefaults | Mapping[str, Any] | None
) -> None:
    """A judge scorer's ``config`` is an AgentConfig: refuse a bad one now,
    not on every sample. ``defaults`` as in OpenMultiAgent."""
    model_defaults = parse_model_defaults(defaults)
    for index, scorer in enumerate(config.scorers):
        if isinstance(scorer, JudgeScorer):
            where = f"{WHERE}.scorers[{index}].config"
            try:
                check_agent_config(parse_agent_config(scorer.config, model_defaults, where))
            except InvalidParamsError as error:
                message = str(error)
                if not message.startswith(where):
                    message = f"{where}: {message}"
                raise InvalidParamsError(message) from None


def scorer_name(scorer: Scorer) -> str:
    return str(scorer.name or scorer.kind)
