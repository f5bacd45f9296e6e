"""The Neovim plugin: ``nvim --headless -u NONE`` runs editors/nvim/tests/run.lua,
which drives the plugin's commands against the real ``oma-host`` through
Neovim's built-in LSP client and checks the reply buffer and the messages.

Debian 12's Neovim (0.7.2) is the target; ``.ci/run`` installs it. A missing
``nvim`` fails this test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editors.helpers import NVIM_DIR, ROOT, ensure_acp_agent, run_client_tests

TIMEOUT_S = 300


def test_nvim_plugin_against_the_real_host(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is not installed: apt-get install -y neovim (see .ci/run)")
    ensure_acp_agent()
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OMA_REPO_ROOT": str(ROOT),
        # Keep Neovim's log, shada and swap files out of the home directory.
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    driver = NVIM_DIR / "tests" / "run.lua"
    report = run_client_tests(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {driver}"],
        ROOT,
        env,
        TIMEOUT_S,
    )
    summary = re.search(r"^(\d+) passed, (\d+) failed$", report, re.MULTILINE)
    assert summary, report
    assert summary.group(2) == "0", report
    assert int(summary.group(1)) >= 10, report


def test_an_image_that_cannot_be_read_is_named_once(tmp_path: Path) -> None:
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is not installed: apt-get install -y neovim (see .ci/run)")
    script = tmp_path / "read.lua"
    script.write_text(
        f"vim.opt.runtimepath:prepend({json.dumps(str(NVIM_DIR))})\n"
        "local _, why = pcall(require('oma.input').image_block, 'nothere.png')\n"
        "io.stdout:write(tostring(why) .. '\\n')\n"
        "vim.cmd('qa!')\n"
    )
    done = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
        cwd=tmp_path,
        env={**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip() == "cannot read nothere.png: No such file or directory", done
