"""The VS Code extension: ``npm test`` in editors/vscode compiles it with tsc
(any type error fails) and runs its node:test suite, which drives the client
logic in ``src/core`` against the real ``oma-host`` over stdio with
vscode-jsonrpc (VS Code itself cannot be downloaded here).

A host that cannot start is one failure naming its command, before any test
runs (``test/preflight.ts``), not every test failing or hanging on its own.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from tests.editors.helpers import (
    VSCODE_DIR,
    ensure_acp_agent,
    ensure_npm_packages,
    run_client_tests,
    run_in_own_group,
)
from tests.npm_packages import npm

TIMEOUT_S = 600
# tsc and one failed start take seconds; a run that waits for test timeouts
# does not fit (and this stays under pytest's own timeout, so the group is killed).
FAILED_START_TIMEOUT_S = 90


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


@pytest.mark.parametrize(
    ("words", "why"),
    [
        pytest.param(["{tmp}/no-such-oma-host"], ": no such command", id="missing-command"),
        pytest.param(
            [sys.executable, "-m", "no_such_oma_module"],
            " exited (1) before answering initialize; its stderr ends:",
            id="exits-at-once",
        ),
    ],
)
def test_a_host_that_cannot_start_is_one_clear_failure(
    tmp_path: Path, words: list[str], why: str
) -> None:
    ensure_npm_packages(VSCODE_DIR, "vscode-languageclient/package.json")
    command = " ".join(words).format(tmp=tmp_path)
    env = {**os.environ, "PYTHON": sys.executable, "OMA_HOST_COMMAND": command}
    done = run_in_own_group([npm(), "test"], VSCODE_DIR, env, FAILED_START_TIMEOUT_S)
    report = f"{done.stdout}\n{done.stderr}"
    assert done.returncode != 0, report
    naming = [line for line in report.splitlines() if command in line]
    assert len(naming) == 1, report
    assert naming[0].startswith("oma-host tests not run: the host "), report
    assert f"`{command}` (OMA_HOST_COMMAND){why}" in naming[0], report
    assert "# fail" not in report, "no test file ran"
