"""The VS Code extension: ``npm test`` in editors/vscode compiles it with tsc
(any type error fails) and runs its node:test suite, which drives the client
logic in ``src/core`` against the real ``oma-host`` over stdio with
vscode-jsonrpc (VS Code itself cannot be downloaded here).
"""

from __future__ import annotations

import os
import re
import sys

from tests.editors.helpers import (
    VSCODE_DIR,
    ensure_acp_agent,
    ensure_npm_packages,
    run_client_tests,
)
from tests.npm_packages import npm

TIMEOUT_S = 600


def test_vscode_extension_compiles_and_its_client_tests_pass() -> None:
    ensure_npm_packages(VSCODE_DIR, "vscode-languageclient/package.json")
    ensure_acp_agent()
    env = {**os.environ, "PYTHON": sys.executable}
    report = run_client_tests([npm(), "test"], VSCODE_DIR, env, TIMEOUT_S)
    passed = re.search(r"^# pass (\d+)$", report, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", report, re.MULTILINE)
    assert passed and failed, report
    assert int(failed.group(1)) == 0, report
    assert int(passed.group(1)) >= 30, report
