"""Debian's chromium driven by Playwright, for the tests that open a real
browser (the VS Code tests, the run viewer's page). ``.ci/install-code-server``
installs chromium; Playwright for Python comes with the dev extra. Outside CI
a missing piece skips the tests with the reason; under CI (``CI`` set) it
fails them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

CHROMIUM = "/usr/bin/chromium"


def unavailable(tests: str, reason: str) -> NoReturn:
    """Skip outside CI; under CI a missing piece is a failure."""
    message = f"{tests} need {reason} (run: bash .ci/install-code-server)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def require_chromium(tests: str) -> None:
    """Chromium and Playwright are there, or ``tests`` are skipped (failed in CI)."""
    if not Path(CHROMIUM).exists():
        unavailable(tests, f"Debian's chromium at {CHROMIUM}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        unavailable(tests, "Playwright for Python (the dev extra)")
