"""Helpers for the editor-client tests: npm installs the clients' tests need.

A missing Node.js or a failed install fails the test; it never skips it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VSCODE_DIR = ROOT / "editors" / "vscode"
NVIM_DIR = ROOT / "editors" / "nvim"
ACP_AGENT_DIR = ROOT / "tests" / "interop" / "acp_agent"
NPM_CI_TIMEOUT_S = 600


def npm() -> str:
    found = shutil.which("npm")
    if found is None or shutil.which("node") is None:
        pytest.fail("Node.js and npm are needed for the editor tests: install them (see .ci/run)")
    return found


def ensure_npm_packages(folder: Path, probe: str) -> None:
    """Run ``npm ci`` in ``folder`` unless ``node_modules/<probe>`` is there."""
    if (folder / "node_modules" / probe).exists():
        return
    done = subprocess.run(
        [npm(), "ci", "--no-audit", "--no-fund"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=NPM_CI_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0 or not (folder / "node_modules" / probe).exists():
        pytest.fail(f"npm ci in {folder} failed ({done.returncode}):\n{done.stderr[-4000:]}")


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
