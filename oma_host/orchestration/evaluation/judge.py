"""The judge scorer: a fresh LLM agent per sample, asked for ``{score, reason}``.

Built from the scorer's ``config`` with the host's model defaults, through an
outputSchema; the Python API and the server share it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from oma_host.core.agent import Agent
from oma_host.core.config import ModelDefaults, parse_agent_config

# Runs a judge scorer: (its raw AgentConfig, the prompt) -> the judge's structured answer.
JudgeRun = Callable[[dict[str, Any], str], Awaitable[Any]]

_JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
    "required": ["score"],
}


def judge_prompt(criteria: str, input: str, output: str) -> str:
    return (
        f"Judge this answer against the criteria.\n\nCriteria: {criteria}\n\n"
        f"Input:\n{input}\n\nAnswer:\n{output}\n\n"
        'Reply with JSON: {"score": a number from 0 to 1, "reason": "one sentence"}.'
    )


def judge_runner(defaults: ModelDefaults | None) -> JudgeRun:
    """The JudgeRun for a host (or OpenMultiAgent) with these model defaults."""

    async def run(raw_config: dict[str, Any], prompt: str) -> Any:
        config = parse_agent_config(raw_config, defaults, "evaluation.scorers[].config")
        judge = Agent(config.model_copy(update={"output_schema": _JUDGE_SCHEMA}))
        try:
            result = await judge.run(prompt)
        finally:
            await judge.close()
        if not result["success"]:
            raise RuntimeError(result["status"].get("message", "the judge failed"))
        return result.get("structured")

    return run
