"""What scorers are given, and records keep, of a run's input and output (``storePayloads``).

One policy for both: ``none`` a content-free description, ``redacted`` the
payload as bounded, redacted text (:mod:`oma_host.core.bounded_text`), ``full``
the same without the credential patterns, the agent's own secrets still taken
out. docs/protocol.md, "Online evaluation".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from oma_host.core.bounded_text import bounded_text
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.orchestration.evaluation.sample import EvaluationSample

StorePayloads = Literal["none", "redacted", "full"]


@dataclass(frozen=True)
class Payloads:
    """A sample's input and output as its scorers see them and its records keep."""

    input: str
    output: str


def describe(value: str | list[LLMMessage], what: str) -> str:
    """The content-free description of ``value`` (``what``: input or output)."""
    if isinstance(value, str):
        return f"[string {what} omitted; {len(value)} characters]"
    return f"[array {what} omitted; {len(value)} items]"


def payload(
    value: str | list[LLMMessage], what: str, mode: StorePayloads, secrets: tuple[str, ...]
) -> str:
    """``value`` as ``mode`` gives it to scorers and records."""
    if mode == "none":
        return describe(value, what)
    return bounded_text(value, Redactor(secrets, patterns=mode == "redacted").redact)


def sample_payloads(sample: EvaluationSample, mode: StorePayloads) -> Payloads:
    return Payloads(
        input=payload(sample.input, "input", mode, sample.secrets),
        output=payload(sample.output, "output", mode, sample.secrets),
    )
