"""OnlineEvaluator: scores sampled runs in the background and stores one record per scorer.

Nothing here can change or delay a run's result: ``submit`` never blocks or
raises, a bounded queue drops and counts overflow, and scorer errors, timeouts
and store failures are counted in the stats. Scorers see, and records keep,
only what ``storePayloads`` allows (:mod:`.payloads`).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from oma_host.core.config import ModelDefaults
from oma_host.core.redact import Redactor
from oma_host.orchestration.evaluation.config import (
    ClientScorer,
    EvaluationConfig,
    JudgeScorer,
    Scorer,
    scorer_name,
)
from oma_host.orchestration.evaluation.judge import JudgeRun, judge_prompt, judge_runner
from oma_host.orchestration.evaluation.payloads import Payloads, sample_payloads
from oma_host.orchestration.evaluation.sample import EvaluationSample
from oma_host.orchestration.evaluation.scorers import Score, read_score, score_locally

log = logging.getLogger(__name__)

REASON_LIMIT_BYTES = 1024

# Asks the client to score a sample (``oma/evaluation/score``); its answer.
ClientScore = Callable[[dict[str, Any]], Awaitable[Any]]
# Stores records; called from a worker thread.
RecordSink = Callable[[list[dict[str, Any]]], None]


def cut_utf8(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never mid-character."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode(errors="ignore")


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


@dataclass
class OnlineEvaluator:
    """Implements the :class:`Evaluator` protocol; see the module docstring.
    ``defaults`` fill in judge scorers' configs, as they do agents'."""

    config: EvaluationConfig
    store_records: RecordSink
    client_score: ClientScore | None = None
    defaults: ModelDefaults | None = None
    stats: Stats = field(default_factory=Stats)
    _judge: JudgeRun = field(init=False)
    _queue: list[EvaluationSample] = field(default_factory=list)
    _workers: set[asyncio.Task[None]] = field(default_factory=set)
    _idle: asyncio.Event | None = None
    _random: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self._judge = judge_runner(self.defaults)

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
        payloads = sample_payloads(sample, self.config.store_payloads)
        for scorer in self.config.scorers:
            try:
                async with asyncio.timeout(self.config.timeout_ms / 1000):
                    score = await self._score(scorer, sample.run_id, payloads)
            except TimeoutError:
                log.warning("scorer %s timed out on %s", scorer_name(scorer), sample.run_id)
                failed = True
                continue
            except Exception as error:
                log.warning("scorer %s failed on %s: %s", scorer_name(scorer), sample.run_id, error)
                failed = True
                continue
            records.append(self._record(sample, scorer, score, payloads))
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

    async def _score(self, scorer: Scorer, run_id: str, payloads: Payloads) -> Score:
        if isinstance(scorer, ClientScorer):
            if self.client_score is None:
                raise RuntimeError("no client is connected to answer oma/evaluation/score")
            answer = await self.client_score(
                {
                    "scorer": scorer.name,
                    "runId": run_id,
                    "input": payloads.input,
                    "output": payloads.output,
                }
            )
            return read_score(answer, f"client scorer {scorer.name!r}")
        if isinstance(scorer, JudgeScorer):
            prompt = judge_prompt(scorer.criteria, payloads.input, payloads.output)
            return read_score(await self._judge(scorer.config, prompt), "the judge")
        # Off the event loop, so timeoutMs holds and the host keeps answering
        # while a long output is matched or validated.
        return await asyncio.to_thread(score_locally, scorer, payloads.output)

    def _record(
        self, sample: EvaluationSample, scorer: Scorer, score: Score, payloads: Payloads
    ) -> dict[str, Any]:
        return {
            "runId": sample.run_id,
            "agent": sample.agent,
            "scorer": scorer_name(scorer),
            "score": score.score,
            "reason": cut_utf8(Redactor(sample.secrets).redact(score.reason), REASON_LIMIT_BYTES),
            "input": payloads.input,
            "output": payloads.output,
            "createdAt": time.time(),
            "metadata": sample.metadata,
        }
