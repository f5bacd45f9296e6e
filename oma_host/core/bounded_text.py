"""A run's content as bounded, redacted text, one rule for evaluation records and spans.

At most :data:`PAYLOAD_LIMIT` code points, a cut marked with :data:`TRUNCATED`;
a cut never splits a character, and surrogate code points (valid in JSON, with
no UTF-8 form) are written as their JSON escape, so every text can be sent and
stored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

PAYLOAD_LIMIT = 8192
TRUNCATED = f"\n[truncated at {PAYLOAD_LIMIT} characters]"
# How much of a long value is serialised and redacted before the cut: enough
# that what survives the bound was redacted in context, and a 20 MB image is
# never scanned whole.
READ_LIMIT = 4 * PAYLOAD_LIMIT
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_of(value: Any, limit: int) -> tuple[str, bool]:
    """At most ``limit`` characters of ``value`` as text (a string as it is,
    anything else as compact JSON with non-ASCII characters kept), and whether
    there was more. JSON is encoded piece by piece, so a long conversation is
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


def escape_surrogates(text: str) -> str:
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def bound(text: str, cut: bool = False) -> str:
    """``text`` within PAYLOAD_LIMIT characters; ``cut`` (or a longer text)
    means it ends with the TRUNCATED marker."""
    if not cut and len(text) <= PAYLOAD_LIMIT:
        return text
    return text[: PAYLOAD_LIMIT - len(TRUNCATED)] + TRUNCATED


def bounded_text(value: Any, redact: Callable[[str], str]) -> str:
    """``value`` as text, passed through ``redact``, then bounded."""
    text, cut = text_of(value, READ_LIMIT)
    return bound(escape_surrogates(redact(text)), cut)
