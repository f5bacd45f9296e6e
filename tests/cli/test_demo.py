"""The README's main job, ``oma-host demo``, runs to completion."""

from __future__ import annotations

import subprocess
import sys


def test_demo_runs_and_reports_all_good() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "oma_host", "demo"], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert "all good" in completed.stdout
    assert "✗" not in completed.stdout
