"""The collector's thresholds follow the requests in flight: raised while
any is, restored when the last one ends, and never touched in a process
that is not a host. Each case runs in a fresh interpreter, since
``tune_for_serving`` freezes the heap of the process that calls it."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from oma_host.process.collector import (
    BUSY_YOUNG_THRESHOLD,
    MIDDLE_THRESHOLD,
    OLD_THRESHOLD,
    YOUNG_THRESHOLD,
)

IDLE = [YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD]
BUSY = [BUSY_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD]


def _thresholds_seen(steps: str) -> dict[str, Any]:
    """Run ``steps`` (calls on ``c``, the collector module, with ``seen(name)``
    recording the thresholds at that point) in a fresh interpreter."""
    script = (
        "import gc, json\n"
        "from oma_host.process import collector as c\n"
        "thresholds = {}\n"
        "def seen(name): thresholds[name] = list(gc.get_threshold())\n"
        f"{steps}\n"
        "print(json.dumps(thresholds))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


def test_the_young_threshold_is_raised_while_any_request_is_in_flight() -> None:
    seen = _thresholds_seen(
        "c.tune_for_serving(); seen('idle')\n"
        "c.request_started(); seen('one')\n"
        "c.request_started(); c.request_finished(); seen('one of two ended')\n"
        "c.request_finished(); seen('all ended')\n"
        "c.request_started(); seen('again')\n"
        "c.request_finished(); seen('idle again')"
    )
    assert seen == {
        "idle": IDLE,
        "one": BUSY,
        "one of two ended": BUSY,
        "all ended": IDLE,
        "again": BUSY,
        "idle again": IDLE,
    }


def test_a_process_that_is_not_a_host_keeps_its_own_thresholds() -> None:
    """The library in someone else's process counts its requests, and leaves
    that process's collector alone."""
    seen = _thresholds_seen(
        "gc.set_threshold(123, 4, 5)\n"
        "c.request_started(); seen('in flight')\n"
        "c.request_finished(); seen('ended')"
    )
    assert seen == {"in flight": [123, 4, 5], "ended": [123, 4, 5]}
