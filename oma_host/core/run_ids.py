"""Run ids: ``run_`` and the hex of a random (version 4) UUID, made cheaply.

Every run, team task and one-off agent gets one (``identity.runId``); the
doors mint one when the client gave none.
"""

from __future__ import annotations

import os

# The version (4) and variant bits of a random UUID, as ``uuid.uuid4`` sets them.
_UUID4_KEEP = ~(0xF000 << 64 | 0xC000 << 48) & (1 << 128) - 1
_UUID4_SET = 0x4000 << 64 | 0x8000 << 48
_RANDOM_BLOCK = 16 * 256  # random bytes fetched at once: the ids of 256 runs


class _RandomIds:
    """Random 128-bit numbers from ``os.urandom``, read a block at a time: a
    system call per run was a measurable part of a short run's cost (and
    costs more on a busy virtual machine). A forked child reads afresh."""

    def __init__(self) -> None:
        self._block = memoryview(b"")
        os.register_at_fork(after_in_child=self.forget)

    def forget(self) -> None:
        self._block = memoryview(b"")

    def next(self) -> int:
        if not self._block:
            self._block = memoryview(os.urandom(_RANDOM_BLOCK))
        value = int.from_bytes(self._block[:16])
        self._block = self._block[16:]
        return value


_random_ids = _RandomIds()


def new_run_id() -> str:
    """``run_`` and the hex of a random (version 4) UUID: what
    ``uuid.uuid4().hex`` gives, without a UUID object or a system call."""
    return f"run_{_random_ids.next() & _UUID4_KEEP | _UUID4_SET:032x}"
