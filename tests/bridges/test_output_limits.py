"""A process agent's output is bounded (issue 12, item 4): past
``backend.maxOutputBytes`` (default 16 MiB) the process group is ended and the
run fails with ``errorInfo.kind: "output_limit"``, keeping the first part; of
stderr only the tail a failure quotes is kept. The host's peak memory stays
near the cap however much a command writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient
from tests.server.helpers import (
    create,
    expect_error,
    kill_quietly,
    peak_rss_bytes,
    process_config,
    wait_dead,
)

GIB = 1024**3
# Records its pid, then writes $SIZE bytes of "a" (and "é", two bytes, first) to stdout.
FLOOD = "echo $$ > {pidfile}; printf '\\303\\251'; head -c $SIZE /dev/zero | tr '\\0' a"


def flood(pidfile: Path, size: int, **backend: Any) -> dict[str, Any]:
    config = process_config("flood", FLOOD.format(pidfile=pidfile), input="none", **backend)
    config["backend"]["env"] = {"SIZE": str(size)}
    return config


@pytest.mark.parametrize("terminal", [False, True])
async def test_output_past_the_limit_ends_the_process_and_keeps_the_first_part(
    host: HostClient, tmp_path: Path, terminal: bool
) -> None:
    pidfile = tmp_path / "pid"
    agent = await create(host, **flood(pidfile, GIB, maxOutputBytes=1001, terminal=terminal))
    try:
        result = await host.request(
            "agent/stream", {"agentId": agent, "input": "go", "partialResultToken": "f"}
        )
        assert result["success"] is False and result["status"]["code"] == "error"
        assert result["errorInfo"]["kind"] == "output_limit"
        assert "more than 1001 bytes" in result["status"]["message"]
        assert result["output"] == "é" + "a" * 999  # 1001 bytes
        streamed = "".join(e["data"] for e in host.progress("f") if e["type"] == "text")
        assert streamed == result["output"]
        assert wait_dead(int(pidfile.read_text()))
    finally:
        if pidfile.exists():
            kill_quietly(int(pidfile.read_text()))


async def test_output_of_exactly_the_limit_is_a_success(host: HostClient, tmp_path: Path) -> None:
    agent = await create(host, **flood(tmp_path / "pid", 998, maxOutputBytes=1000))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True and result["output"] == "é" + "a" * 998


async def test_the_limit_must_be_a_positive_integer(host: HostClient) -> None:
    for bad in (0, -1, "16", 1.5):
        config = process_config("p", "true", maxOutputBytes=bad)
        await expect_error(
            host.request("agent/create", {"config": config}), -32602, "InvalidParams"
        )


@pytest.mark.parametrize(
    ("stream", "terminal"), [("stdout", False), ("stderr", False), ("stdout", True)]
)
async def test_a_gigabyte_of_output_keeps_the_host_near_the_cap(
    tmp_path: Path, stream: str, terminal: bool
) -> None:
    host = await HostClient.spawn()
    await host.initialize()
    assert host.process is not None
    script = "head -c 1073741824 /dev/zero | tr '\\0' a" + (" >&2" if stream == "stderr" else "")
    agent = await create(host, **process_config("gig", script, input="none", terminal=terminal))
    try:
        result = await host.request("agent/run", {"agentId": agent, "input": "go"}, timeout=120)
        peak = peak_rss_bytes(host.process.pid) / 2**20
    finally:
        await host.close()
    if stream == "stdout":
        assert result["errorInfo"]["kind"] == "output_limit"
        assert len(result["output"]) == 16 * 1024 * 1024
    else:  # all of it drained, only the tail kept
        assert result["success"] is True and result["output"] == ""
    print(f"host peak RSS, 1 GiB on {stream} (terminal={terminal}): {peak:.0f} MB")
    assert peak < 300
