"""Fixtures for the ACP door's tests: ``oma-host acp`` spawned as a subprocess
and driven by ACP clients nobody here wrote, the official TypeScript SDK's
client (``client/client.mjs``) and ``acpx``, against the provider simulator.

The clients are npm packages installed in ``client/``; ``.ci/install-dev``
installs them with ``npm ci``, a plain ``pytest`` on first use. A missing
Node.js or a failed install fails the tests: it never skips them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oma_host.testing.simulator import Simulator
from tests.acp_server.helpers import ACP_AGENT_DIR, Door
from tests.npm_packages import ensure_npm_packages

CLIENT_DIR = Path(__file__).parent / "client"


@pytest.fixture(scope="session")
def client_dir() -> Path:
    ensure_npm_packages(CLIENT_DIR, "acpx/package.json")
    return CLIENT_DIR


@pytest.fixture(scope="session")
def acp_agent_dir() -> Path:
    """The TypeScript SDK's scripted ACP agent, for wrapped-agent tests."""
    ensure_npm_packages(ACP_AGENT_DIR, "@agentclientprotocol/sdk/package.json")
    return ACP_AGENT_DIR


@pytest.fixture
def door(client_dir: Path, sim: Simulator, tmp_path: Path) -> Door:
    """``oma-host acp`` over an agents file whose first agent talks to ``sim``."""
    return Door(client_dir, sim, tmp_path)
