"""Fixtures for the interop tests: real peers (ACP agents written by others)
driven through the real ``oma-host`` over stdio.

The peers are npm packages installed in folders beside these tests. ``.ci/run``
installs them with ``npm ci``; a developer's plain ``pytest`` installs them here
on first use. A missing Node.js or a failed install fails the tests: it never
skips them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.interop.helpers import AcpConfig
from tests.npm_packages import ensure_npm_packages

HERE = Path(__file__).parent
ACP_AGENT_DIR = HERE / "acp_agent"
GEMINI_DIR = HERE / "gemini"


@pytest.fixture(scope="session")
def acp_agent_script() -> str:
    """The scripted ACP agent built on @agentclientprotocol/sdk (see agent.mjs)."""
    ensure_npm_packages(ACP_AGENT_DIR, "@agentclientprotocol/sdk/package.json")
    return str(ACP_AGENT_DIR / "agent.mjs")


@pytest.fixture(scope="session")
def gemini_script() -> str:
    """Gemini CLI's entry point, as its npm package installs it."""
    ensure_npm_packages(GEMINI_DIR, "@google/gemini-cli/package.json")
    return str(GEMINI_DIR / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js")


@pytest.fixture
def acp(acp_agent_script: str) -> AcpConfig:
    """Builds the config of an agent backed by the scripted ACP agent."""

    def config(
        name: str = "coder",
        *,
        env: dict[str, str] | None = None,
        permission: str | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        backend: dict[str, Any] = {"kind": "acp", "command": "node", "args": [acp_agent_script]}
        if env:
            backend["env"] = env
        if permission:
            backend["permission"] = permission
        return {"name": name, "backend": backend, **fields}

    return config
