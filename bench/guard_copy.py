"""Micro benchmark: the shape guard and its copy, against ``copy.deepcopy``.

``oma_host.core.messages.guard_run_input`` copies caller data as plain JSON data
and validates the copy (docs/protocol.md, "The shape guard");
``copy.deepcopy`` of the same data is the naive baseline, the copy alone
without any checking. Two inputs:

* a 10,000-message conversation, alternating user and assistant, one text
  block each (many small objects: the cost is per object);
* one user message holding a 20 MB base64 image (one huge string: the cost
  is whether the string is duplicated; Python strings are immutable, so
  neither variant copies it).

``messages.clone`` (the fresh copy handed to hooks, progress callbacks and
``get_history``) and the wire path (``owned=True``: params just parsed off the
wire are checked, not copied) are measured beside them. The TypeScript
system's figures for guard-and-copy on Node (12.8 ms and 12.5 ms) are printed
for reference; they were not measured here.
"""

from __future__ import annotations

import base64
import copy
import gc
import random
from collections.abc import Callable
from typing import Any

from bench.harness import Comparison, calibrate, interleave, per_call
from oma_host.core.guard import clone, guard_run_input

GUARD = "guard_run_input (validate + copy)"
DEEPCOPY = "copy.deepcopy"
CLONE = "messages.clone (hand-out copy)"
OWNED = "guard_run_input(owned=True) (wire: check only)"
TS_REFERENCE_MS = {"conversation": 12.8, "image": 12.5}
CONVERSATION_LENGTH = 10_000
IMAGE_BYTES = 15_000_000  # base64 of 15,000,000 bytes is 20,000,000 characters


def conversation(length: int = CONVERSATION_LENGTH) -> list[dict[str, Any]]:
    """``length`` messages, alternating user/assistant, one text block each."""
    return [
        {
            "role": "user" if index % 2 == 0 else "assistant",
            "content": [{"type": "text", "text": f"message {index}: the quick brown fox"}],
        }
        for index in range(length)
    ]


def image_message(raw_bytes: int = IMAGE_BYTES) -> list[dict[str, Any]]:
    """One user message holding one base64 image of ``raw_bytes`` bytes."""
    data = base64.b64encode(random.Random(0).randbytes(raw_bytes)).decode("ascii")
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": data},
                },
            ],
        }
    ]


def _collected(fn: Callable[[], object]) -> Callable[[], float]:
    """Time ``fn`` after a full collection, so no variant pays for another's garbage."""
    number = calibrate(fn)
    sample = per_call(fn, number)

    def run() -> float:
        gc.collect()
        return sample()

    return run


def _compare(key: str, title: str, data: list[dict[str, Any]], rounds: int) -> Comparison:
    if guard_run_input(data) != data:
        raise RuntimeError("guard_run_input changed the data it copied")
    samples = interleave(
        {
            DEEPCOPY: _collected(lambda: copy.deepcopy(data)),
            GUARD: _collected(lambda: guard_run_input(data)),
            CLONE: _collected(lambda: clone(data)),
            OWNED: _collected(lambda: guard_run_input(data, owned=True)),
        },
        rounds,
        warmup=2,
    )
    return Comparison(
        key=key,
        title=title,
        baseline=DEEPCOPY,
        subject=GUARD,
        samples=samples,
        unit_note="; ms per call",
        reference_ms={GUARD: TS_REFERENCE_MS[key.removeprefix("guard_")]},
    )


def run_guard_copy(rounds: int) -> list[Comparison]:
    """Both inputs, each with its variants interleaved."""
    image = image_message()
    size = len(image[0]["content"][1]["source"]["data"])
    comparisons = [
        _compare(
            "guard_conversation",
            f"guard + copy: {CONVERSATION_LENGTH:,}-message conversation",
            conversation(),
            rounds,
        ),
        _compare(
            "guard_image",
            f"guard + copy: one message with a {size / 1e6:.0f} MB base64 image",
            image,
            rounds,
        ),
    ]
    comparisons[1].notes.append(
        "strings are immutable and shared by every variant; the image is never duplicated"
    )
    return comparisons
