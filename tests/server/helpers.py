"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError

PY = sys.executable


async def expect_error(call: Awaitable[Any], code: int, type_name: str) -> RpcError:
    """Await a request that must fail with ``code`` and ``error.data.type``."""
    with pytest.raises(RpcError) as caught:
        await call
    error = caught.value
    assert error.code == code, error
    assert isinstance(error.data, dict) and error.data.get("type") == type_name, error.data
    return error


async def create(client: HostClient, **config: Any) -> str:
    result = await client.request("agent/create", {"config": config})
    agent_id: str = result["agentId"]
    return agent_id


def process_config(name: str, script: str, **backend: Any) -> dict[str, Any]:
    """A process-backend agent running a ``sh -c`` script."""
    return {
        "name": name,
        "backend": {"kind": "process", "command": "sh", "args": ["-c", script], **backend},
    }


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state to tell.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return False


def kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


async def wait_for_file(path: Path) -> str:
    """The stripped contents of ``path`` once a test process has written it."""
    for _ in range(400):
        if path.exists() and (text := path.read_text().strip()):
            return text
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never appeared")


def received(result: dict[str, Any]) -> list[dict[str, Any]]:
    """What the ``test`` provider (model echo) was sent, read back from its reply."""
    messages: list[dict[str, Any]] = json.loads(result["output"])["messages"]
    return messages


async def wait_for_progress(client: HostClient, token: Any, count: int = 1) -> None:
    """Wait until ``count`` ``$/progress`` events for ``token`` have arrived."""
    for _ in range(400):
        if len(client.progress(token)) >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"fewer than {count} progress events for {token!r} arrived")
