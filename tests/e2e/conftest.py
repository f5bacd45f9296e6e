"""Fixtures for the end-to-end tests: each test spawns the real ``oma-host``
over stdio (``python -m oma_host``) and drives it as an editor would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from oma_host.client import HostClient


@pytest.fixture
async def host() -> AsyncIterator[HostClient]:
    client = await HostClient.spawn()
    await client.initialize()
    yield client
    await client.close()
