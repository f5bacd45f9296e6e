"""What stops an LLM agent's run that should not go on: loops, fallback models, cost budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

from oma_host.core.config import AgentConfig, LoopDetectionConfig
from oma_host.core.cost import prices_of
from oma_host.core.errors import InvalidParamsError
from oma_host.core.provider_facts import DEFAULT_PROVIDER
from oma_host.providers.base import ProviderError

# -- loop detection -------------------------------------------------------------

_DEFAULT_LOOP_DETECTION: Final = LoopDetectionConfig()


def _canonical(value: Any) -> Any:
    """A form of a JSON value that is equal for equal JSON values: objects
    whatever their key order, numbers whatever their spelling (``1`` and
    ``1.0``), and never ``true`` for ``1`` (Python's ``True == 1``)."""
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    return ("string", value)


Verdict = Literal["run", "warn", "end"]


@dataclass
class RepeatWatch:
    """Counts a run's tool calls that repeat the one before (same tool, equal
    input), in the order the model made them, the calls of one turn
    included. The ``maxRepeats``-th identical call in a row is not run but
    answered with :meth:`warning`; the next identical one ends the run."""

    max_repeats: int | None  # None: loopDetection "off", every call runs
    _last: tuple[str, Any] | None = None
    _streak: int = 0

    @classmethod
    def of(cls, config: AgentConfig) -> RepeatWatch:
        """The watch for a run of the agent (one that lets every call run
        when ``loopDetection`` is off)."""
        setting = config.loop_detection
        if setting == "off":
            return cls(None)
        return cls((setting or _DEFAULT_LOOP_DETECTION).max_repeats)

    def see(self, name: str, tool_input: Any) -> Verdict:
        """What to do with the next call the model made."""
        if self.max_repeats is None:
            return "run"
        key = (name, _canonical(tool_input))
        if key == self._last:
            self._streak += 1
        else:
            self._last, self._streak = key, 1
        if self._streak < self.max_repeats:
            return "run"
        return "warn" if self._streak == self.max_repeats else "end"

    def warning(self, name: str) -> str:
        """The tool result of the call that reached ``maxRepeats``."""
        return (
            f"Not run: you have called {name} with this same input {self.max_repeats} "
            "times in a row, with no other call in between, so its result would be "
            "the one you already have. Change your approach (other input, another "
            "tool, or answer with what you know); the same call once more ends the run."
        )

    def ending(self, name: str) -> str:
        """The run's error message when the model repeats the call after the warning."""
        return (
            f"loopDetection: the model called {name} with the same input "
            f"{self._streak} times in a row, after a warning at {self.max_repeats} "
            f"(maxRepeats={self.max_repeats})"
        )


# -- fallback models ------------------------------------------------------------


def models_to_try(config: AgentConfig) -> tuple[str, ...]:
    """The agent's model, then its ``fallbackModels`` in order, each once
    (a fallback that is the model itself, as after switching to it, is
    skipped: it has just failed)."""
    models = [config.model or ""]
    for model in config.fallback_models or ():
        if model not in models:
            models.append(model)
    return tuple(models)


def falls_back(error: ProviderError) -> bool:
    """Whether another model may answer the turn ``error`` failed: the
    provider was overloaded (529), limited the rate (429) or failed (5xx),
    after the shared client's retries. A request the provider refused as
    such (400, an unknown model, a bad key) would fail on any model."""
    status = error.status_code
    return error.kind == "provider" and status is not None and (status == 429 or status >= 500)


# -- the cost budget ------------------------------------------------------------


def check_cost_budget(config: AgentConfig) -> None:
    """Refuse a ``maxCostBudget`` that could never end a run: one of the
    models the agent may use has no known price and no ``pricing`` gives one."""
    if config.max_cost_budget is None:
        return
    for model in models_to_try(config):
        if prices_of(config, model) is None:
            where = "" if model == config.model else " (in fallbackModels)"
            raise InvalidParamsError(
                f"config.maxCostBudget: the price of model {model!r}{where} is not known "
                f"(the model table of provider {config.provider or DEFAULT_PROVIDER!r} does not "
                "list it: docs/providers.md), so the budget could never be reached; set "
                "config.pricing {input, output} in USD per million tokens, or leave "
                "maxCostBudget out"
            )
