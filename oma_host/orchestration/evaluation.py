"""Online evaluation of ``oma/runAgent`` results (PROTOCOL.md section 10).

A sampled run becomes an :class:`~oma_host.orchestration.one_off.EvaluationSample` on
a bounded in-process queue; ``maxConcurrent`` workers score it with every
configured scorer and store one record per scorer. Nothing here can change or
delay a run's result: ``submit`` never blocks or raises, overflow is dropped
and counted, and scorer errors, timeouts and store failures are counted in
the stats (``sampled``, ``enqueued``, ``completed``, ``dropped``, ``failed``,
``storeFailed``). A sample whose scorers all answered counts as completed;
one where any scorer failed or timed out counts as failed (the records of the
scorers that did answer are still stored).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from oma_host.core.errors import InvalidParamsError
from oma_host.core.redact import Redactor
from oma_host.orchestration.one_off import EvaluationSample

log = logging.getLogger(__name__)

PAYLOAD_LIMIT_BYTES = 8 * 1024
REASON_LIMIT_BYTES = 1024
SCORER_TIMEOUT_S = 30.0


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never mid-character."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


# -- configuration ------------------------------------------------------------


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
            re.compile(self.pattern)
        except re.error as error:
            raise ValueError(f"pattern is not a valid regular expression: {error}") from None
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


Scorer = Annotated[
    LengthScorer | ContainsScorer | RegexScorer | JsonScorer | JudgeScorer | ClientScorer,
    Field(discriminator="kind"),
]


class EvaluationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)
    sample: Annotated[float, Field(ge=0, le=1)] = 0
    store_payloads: Literal["none", "redacted", "full"] = Field(
        default="none", alias="storePayloads"
    )
    scorers: list[Scorer] = Field(default_factory=list)
    max_concurrent: Annotated[int, Field(ge=1)] = Field(default=1, alias="maxConcurrent")
    max_queue_length: Annotated[int, Field(ge=0)] = Field(default=100, alias="maxQueueLength")
    timeout_ms: Annotated[int, Field(gt=0)] = Field(default=30_000, alias="timeoutMs")


def parse_evaluation_config(raw: Any) -> EvaluationConfig:
    try:
        return EvaluationConfig.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in item['loc'])}: {item['msg']}" for item in error.errors()
        )
        raise InvalidParamsError(f"initializationOptions.evaluation: {problems}") from None


def check_judges(config: EvaluationConfig, defaults: Any) -> None:
    """A judge scorer's ``config`` is an AgentConfig: refuse a bad one now,
    not on every sample."""
    from oma_host.core.agent import Agent
    from oma_host.core.config import ModelDefaults, parse_agent_config

    model_defaults = None if defaults is None else ModelDefaults.model_validate(defaults)
    for index, scorer in enumerate(config.scorers):
        if isinstance(scorer, JudgeScorer):
            where = f"initializationOptions.evaluation.scorers[{index}].config"
            try:
                Agent(parse_agent_config(scorer.config, model_defaults, where))
            except InvalidParamsError as error:
                message = str(error)
                if not message.startswith(where):
                    message = f"{where}: {message}"
                raise InvalidParamsError(message) from None


def scorer_name(scorer: Any) -> str:
    return str(scorer.name or scorer.kind)


# -- scoring ------------------------------------------------------------------


@dataclass
class Score:
    score: float
    reason: str = ""


ClientScore = Callable[[dict[str, Any]], Awaitable[Any]]
JudgeRun = Callable[[dict[str, Any], str], Awaitable[Any]]


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


def _read_score(answer: Any, who: str) -> Score:
    if not isinstance(answer, dict) or not isinstance(answer.get("score"), int | float):
        raise ValueError(f"{who} answered without a numeric score: {str(answer)[:200]}")
    reason = answer.get("reason")
    return Score(float(answer["score"]), reason if isinstance(reason, str) else "")


# -- the evaluator --------------------------------------------------------------


@dataclass
class Stats:
    sampled: int = 0
    enqueued: int = 0
    completed: int = 0
    dropped: int = 0
    failed: int = 0
    store_failed: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "sampled": self.sampled,
            "enqueued": self.enqueued,
            "completed": self.completed,
            "dropped": self.dropped,
            "failed": self.failed,
            "storeFailed": self.store_failed,
        }


RecordSink = Callable[[list[dict[str, Any]]], None]


@dataclass
class OnlineEvaluator:
    """Implements the orchestrator's Evaluator protocol; see the module docstring."""

    config: EvaluationConfig
    store_records: RecordSink
    client_score: ClientScore | None = None
    judge_run: JudgeRun | None = None
    stats: Stats = field(default_factory=Stats)
    _queue: list[EvaluationSample] = field(default_factory=list)
    _workers: set[asyncio.Task[None]] = field(default_factory=set)
    _idle: asyncio.Event | None = None
    _random: random.Random = field(default_factory=random.Random)

    @property
    def enabled(self) -> bool:
        return self.config.sample > 0 and bool(self.config.scorers)

    def submit(self, sample: EvaluationSample) -> None:
        if not self.enabled or self._random.random() >= self.config.sample:
            return
        self.stats.sampled += 1
        if len(self._queue) >= self.config.max_queue_length:
            self.stats.dropped += 1
            return
        self._queue.append(sample)
        self.stats.enqueued += 1
        if self._idle is None:
            self._idle = asyncio.Event()
        self._idle.clear()
        while len(self._workers) < self.config.max_concurrent:
            task = asyncio.ensure_future(self._work())
            self._workers.add(task)
            task.add_done_callback(self._worker_done)

    def _worker_done(self, task: asyncio.Task[None]) -> None:
        self._workers.discard(task)
        if not self._workers and not self._queue and self._idle is not None:
            self._idle.set()

    async def _work(self) -> None:
        while self._queue:
            sample = self._queue.pop(0)
            try:
                await self._evaluate(sample)
            except Exception:  # never let one sample stop the worker
                log.exception("evaluation of %s failed", sample.run_id)
                self.stats.failed += 1

    async def flush(self, timeout_s: float | None = None) -> bool:
        """Wait until every queued sample is settled; False on timeout."""
        if not self._workers and not self._queue:
            return True
        assert self._idle is not None
        try:
            async with asyncio.timeout(timeout_s):
                await self._idle.wait()
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        for task in list(self._workers):
            task.cancel()
        self._queue.clear()

    async def _evaluate(self, sample: EvaluationSample) -> None:
        records: list[dict[str, Any]] = []
        failed = False
        for scorer in self.config.scorers:
            try:
                async with asyncio.timeout(self.config.timeout_ms / 1000):
                    score = await self._score(scorer, sample)
            except TimeoutError:
                log.warning("scorer %s timed out on %s", scorer_name(scorer), sample.run_id)
                failed = True
                continue
            except Exception as error:
                log.warning("scorer %s failed on %s: %s", scorer_name(scorer), sample.run_id, error)
                failed = True
                continue
            records.append(self._record(sample, scorer, score))
        if records:
            try:
                await asyncio.to_thread(self.store_records, records)
            except Exception as error:
                log.warning("could not store evaluation records of %s: %s", sample.run_id, error)
                self.stats.store_failed += 1
        if failed:
            self.stats.failed += 1
        else:
            self.stats.completed += 1

    async def _score(self, scorer: Any, sample: EvaluationSample) -> Score:
        if isinstance(scorer, LengthScorer):
            return _score_length(scorer, sample.output)
        if isinstance(scorer, ContainsScorer):
            found = scorer.text in sample.output
            return Score(
                1.0 if found else 0.0, f"{'contains' if found else 'lacks'} {scorer.text!r}"
            )
        if isinstance(scorer, RegexScorer):
            match = re.search(scorer.pattern, sample.output)
            return Score(1.0 if match else 0.0, "matches" if match else "no match")
        if isinstance(scorer, JsonScorer):
            return _score_json(scorer, sample.output)
        if isinstance(scorer, ClientScorer):
            if self.client_score is None:
                raise RuntimeError("no client is connected to answer oma/evaluation/score")
            answer = await self.client_score(
                {
                    "scorer": scorer.name,
                    "runId": sample.run_id,
                    "input": sample.input,
                    "output": sample.output,
                }
            )
            return _read_score(answer, f"client scorer {scorer.name!r}")
        assert isinstance(scorer, JudgeScorer)
        if self.judge_run is None:
            raise RuntimeError("no judge runner is configured")
        prompt = (
            f"Judge this answer against the criteria.\n\nCriteria: {scorer.criteria}\n\n"
            f"Input:\n{sample.input}\n\nAnswer:\n{sample.output}\n\n"
            'Reply with JSON: {"score": a number from 0 to 1, "reason": "one sentence"}.'
        )
        return _read_score(await self.judge_run(scorer.config, prompt), "the judge")

    def _record(self, sample: EvaluationSample, scorer: Any, score: Score) -> dict[str, Any]:
        mode = self.config.store_payloads
        redactor = Redactor(sample.secrets)
        # "full" keeps payloads as they were, except the agent's own keys,
        # which are never stored anywhere.
        keys_only = Redactor(sample.secrets, patterns=False)

        def payload(text: str) -> str | None:
            if mode == "none":
                return None
            cleaned = redactor.redact(text) if mode == "redacted" else keys_only.redact(text)
            return cut_utf8(cleaned, PAYLOAD_LIMIT_BYTES)

        return {
            "runId": sample.run_id,
            "agent": sample.agent,
            "scorer": scorer_name(scorer),
            "score": score.score,
            "reason": cut_utf8(redactor.redact(score.reason), REASON_LIMIT_BYTES),
            "input": payload(sample.input),
            "output": payload(sample.output),
            "createdAt": time.time(),
            "metadata": sample.metadata,
        }
