"""What a newcomer meets first: a bare ``oma-host`` on a terminal says what it
waits for, ``--version`` says the version (``oma-host acp --version`` too,
without waiting for an editor), and ``.ci/install-dev`` names a missing
prerequisite before it installs anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from oma_host.core.version import __version__

ROOT = Path(__file__).resolve().parents[2]


def test_a_bare_host_on_a_terminal_says_it_waits_for_json_rpc() -> None:
    child = pexpect.spawn(sys.executable, ["-m", "oma_host"], timeout=30, encoding="utf-8")
    try:
        child.expect("waiting for JSON-RPC on stdin")
        child.expect("--help")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_a_bare_host_on_a_pipe_prints_nothing() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oma_host"], input=b"", capture_output=True, timeout=30
    )
    assert done.returncode == 0
    assert done.stdout == b""
    assert b"waiting" not in done.stderr


@pytest.mark.parametrize("command", [[], ["acp"]])
def test_version_prints_the_version_and_exits_0(command: list[str]) -> None:
    # stdin a pipe kept open: the parser answers --version before the door reads it.
    reading, writing = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "oma_host", *command, "--version"],
            stdin=reading,
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        os.close(reading)
        os.close(writing)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"oma-host {__version__}\n", "")


def test_install_dev_names_what_is_missing_before_installing(tmp_path: Path) -> None:
    # A PATH with Python and the few tools the script itself uses, but no Node.js.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("dirname", "bash"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(sys.executable)
    done = subprocess.run(
        [str(bin_dir / "bash"), str(ROOT / ".ci" / "install-dev")],
        env={**os.environ, "PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    assert "missing prerequisites" in done.stderr
    assert "Node.js 20 or newer (node)" in done.stderr
    assert "npm" in done.stderr
    assert "pip" not in done.stdout  # nothing was installed
