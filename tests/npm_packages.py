"""npm packages the tests need (the real ACP peers, the VS Code extension):
installed with ``npm ci`` on first use, so a plain ``pytest`` works on a
machine where ``.ci/install-dev`` has not run. A missing Node.js or a failed
install fails the test; it never skips it. Parallel workers (pytest-xdist)
take turns: one installs a folder while the others wait for it."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

NPM_CI_TIMEOUT_S = 600


def npm() -> str:
    found = shutil.which("npm")
    if found is None or shutil.which("node") is None:
        pytest.fail(
            "Node.js and npm are needed for these tests: install them (see .ci/install-dev)"
        )
    return found


def ensure_npm_packages(folder: Path, probe: str) -> None:
    """Run ``npm ci`` in ``folder`` unless ``node_modules/<probe>`` is there."""
    if (folder / "node_modules" / probe).exists():
        return
    # npm ci first deletes node_modules: a second worker's npm ci in the same
    # folder would delete the first's install under it.
    key = hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"oma-host-npm-ci-{key}.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "node_modules" / probe).exists():  # installed while we waited
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
