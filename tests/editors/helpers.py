"""Helpers for the editor-client tests: npm installs the clients' tests need.

A missing Node.js or a failed install fails the test; it never skips it.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.npm_packages import ensure_npm_packages

ROOT = Path(__file__).resolve().parents[2]
VSCODE_DIR = ROOT / "editors" / "vscode"
NVIM_DIR = ROOT / "editors" / "nvim"
ACP_AGENT_DIR = ROOT / "tests" / "interop" / "acp_agent"


def ensure_acp_agent() -> None:
    """The interop tests' scripted ACP agent, used for permission requests."""
    ensure_npm_packages(ACP_AGENT_DIR, "@agentclientprotocol/sdk/package.json")


def run_in_own_group(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """Run a client's test command; past ``timeout`` its whole process group is
    killed (npm, node and the hosts they started) and the test fails."""
    with subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, stderr = process.communicate()
            pytest.fail(
                f"{argv[0]} did not finish within {timeout} s:\n{stdout[-8000:]}\n{stderr[-4000:]}"
            )
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)


def run_client_tests(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Run an editor's own test runner; returns its stdout, fails with its tail."""
    done = run_in_own_group(argv, cwd, env, timeout)
    report = f"{done.stdout[-12000:]}\n{done.stderr[-4000:]}"
    if done.returncode != 0:
        pytest.fail(f"{argv[0]} exited with {done.returncode}:\n{report}")
    return done.stdout
