"""Fixtures of the command-line tests: ``recorded``, the state directory
made by real runs (:mod:`tests.cli.recorded_runs`), made once for the
session and read by ``oma-host runs`` and its viewer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from oma_host.testing.simulator import Simulator
from tests.cli.recorded_runs import make_runs


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    """A state directory made by real runs, and their ids by what they were."""
    state = tmp_path_factory.mktemp("runs-state")
    work = tmp_path_factory.mktemp("runs-work")
    with Simulator() as sim:
        runs = asyncio.run(make_runs(state, work, sim))
    yield state, runs
