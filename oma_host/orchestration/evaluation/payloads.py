"""What scorers are given, and records keep, of a run's input and output:
``storePayloads`` (docs/protocol.md, "Online evaluation"), one policy for both.

``none``      a content-free description: ``[array input omitted; 3 items]``,
              ``[string output omitted; 120 characters]``
``redacted``  the payload as text (a string as it is, messages as compact JSON
              with non-ASCII characters kept), credentials redacted, bounded
``full``      the same without the credential patterns; the agent's own
              secret values are still taken out

Bounded and redacted as :mod:`oma_host.core.bounded_text` says (at most
8,192 characters, a cut marked), the rule span content follows too.
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
