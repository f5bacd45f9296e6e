"""What scorers are given, and records keep, of a run's input and output:
``storePayloads`` (PROTOCOL.md section 10), one policy for both.

``none``      a content-free description: ``[array input omitted; 3 items]``,
              ``[string output omitted; 120 characters]``
``redacted``  the payload as text (a string as it is, messages as compact JSON
              with non-ASCII characters kept), credentials redacted, bounded
``full``      the same without the credential patterns; the agent's own
              secret values are still taken out

Bounded means at most 8,192 characters (code points); a payload cut to fit
ends with ``\\n[truncated at 8192 characters]``, inside the bound. A cut never
splits a character, nor a surrogate pair: surrogate code points, which have no
UTF-8 form (a lone ``"\\ud800"`` is valid JSON), are written as their JSON
escape (``\\ud800``) first, so every payload can be sent and stored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal

from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.orchestration.evaluation.sample import EvaluationSample

StorePayloads = Literal["none", "redacted", "full"]

PAYLOAD_LIMIT = 8192
TRUNCATED = f"\n[truncated at {PAYLOAD_LIMIT} characters]"
# How much of a long payload is serialised and redacted before the cut: enough
# that what survives the bound was redacted in context, and a 20 MB image is
# never scanned whole.
_READ_LIMIT = 4 * PAYLOAD_LIMIT
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def _text(value: str | list[LLMMessage], limit: int) -> tuple[str, bool]:
    """At most ``limit`` characters of ``value`` as text, and whether there
    was more. Messages are encoded piece by piece, so a long conversation is
    never serialised whole."""
    if isinstance(value, str):
        return value[:limit], len(value) > limit
    pieces: list[str] = []
    size = 0
    for piece in _ENCODER.iterencode(value):
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            return "".join(pieces)[:limit], True
    return "".join(pieces), False


def _escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def bound(text: str, cut: bool = False) -> str:
    """``text`` within PAYLOAD_LIMIT characters; ``cut`` (or a longer text)
    means it ends with the TRUNCATED marker."""
    if not cut and len(text) <= PAYLOAD_LIMIT:
        return text
    return text[: PAYLOAD_LIMIT - len(TRUNCATED)] + TRUNCATED


def payload(
    value: str | list[LLMMessage], what: str, mode: StorePayloads, secrets: tuple[str, ...]
) -> str:
    """``value`` as ``mode`` gives it to scorers and records."""
    if mode == "none":
        return describe(value, what)
    text, cut = _text(value, _READ_LIMIT)
    redacted = Redactor(secrets, patterns=mode == "redacted").redact(text)
    return bound(_escape_surrogates(redacted), cut)


def sample_payloads(sample: EvaluationSample, mode: StorePayloads) -> Payloads:
    return Payloads(
        input=payload(sample.input, "input", mode, sample.secrets),
        output=payload(sample.output, "output", mode, sample.secrets),
    )
