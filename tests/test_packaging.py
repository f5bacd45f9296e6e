"""What ``pip install .`` installs: one top-level package, ``oma_host``, with
every package of the source (``bridges/`` as ``oma_host.bridges``) and its
data files."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("wheel")
    # uv builds the wheel in an isolated environment, as pip does for a user.
    done = subprocess.run(
        [sys.executable, "-m", "uv", "build", "--wheel", "-q", "-o", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = out.glob("oma_host-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_one_top_level_package(wheel_names: set[str]) -> None:
    tops = {name.split("/")[0] for name in wheel_names}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"oma_host"}


def test_every_source_package_is_installed(wheel_names: set[str]) -> None:
    expected = set()
    for folder, _dirs, files in os.walk(ROOT / "oma_host", followlinks=True):
        for name in files:
            if name.endswith(".py") and "__pycache__" not in folder:
                expected.add((Path(folder) / name).relative_to(ROOT).as_posix())
    assert "oma_host/bridges/acp/session.py" in expected
    assert sorted(expected - wheel_names) == []


def test_data_files_are_installed(wheel_names: set[str]) -> None:
    for data in ("oma_host/py.typed", "oma_host/core/provider_table.json"):
        assert data in wheel_names
    assert any(name.startswith("oma_host/cli/viewer/") for name in wheel_names)
