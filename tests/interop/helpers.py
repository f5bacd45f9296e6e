"""Helpers shared by the interop tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.server.helpers import wait_for_file

# Builds an ACP agent config: acp(name, *, env=None, permission=None, **config fields).
AcpConfig = Callable[..., dict[str, Any]]


def whoami(output: str) -> dict[str, str]:
    """The fields of the scripted agent's ``[whoami]`` reply (pid, session, turn)."""
    return dict(part.split("=", 1) for part in output.split())


async def spawned_pids(marker: Path) -> list[int]:
    """The pids the scripted agent wrote to its marker file, one per start."""
    return [int(line) for line in (await wait_for_file(marker)).split()]
