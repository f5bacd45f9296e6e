"""Helpers for the editor-client tests: npm installs the clients' tests need.

A missing Node.js or a failed install fails the test; it never skips it.
"""

from __future__ import annotations

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


def run_client_tests(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> str:
    """Run an editor's own test runner; returns its stdout, fails with its tail."""
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    report = f"{done.stdout[-12000:]}\n{done.stderr[-4000:]}"
    if done.returncode != 0:
        pytest.fail(f"{argv[0]} exited with {done.returncode}:\n{report}")
    return done.stdout
