"""The evaluation ``regex`` scorer runs on RE2, off the event loop: a
pattern that backtracks for seconds in Python's ``re`` neither freezes the
host nor fails the sample, and a pattern RE2 cannot run is refused at
``initialize`` saying why."""

from __future__ import annotations

import time

import pytest

from oma_host.cli.client import HostClient, RpcError, host_argv

SLOW_FOR_BACKTRACKING = "a" * 28 + "!"  # (a+)+$ took Python's re 12 s on it
PRINTER = {
    "name": "printer",
    "backend": {"kind": "process", "command": "printf", "args": [SLOW_FOR_BACKTRACKING]},
}


async def test_a_backtracking_pattern_neither_freezes_the_host_nor_fails_the_sample() -> None:
    client = await HostClient.spawn(host_argv("--state-dir", ":memory:"))
    await client.initialize(
        {
            "evaluation": {
                "sample": 1,
                "timeoutMs": 5000,
                "storePayloads": "full",  # the scorer reads the real output
                "scorers": [{"kind": "regex", "pattern": "(a+)+$"}],
            }
        }
    )
    try:
        run = await client.request("oma/runAgent", {"config": PRINTER, "input": "x"})
        assert run["output"] == SLOW_FOR_BACKTRACKING
        started = time.monotonic()
        await client.request("oma/evaluation/stats", {})  # answered while the scorer runs
        assert time.monotonic() - started < 2
        settled = await client.request("oma/evaluation/flush", {"timeoutMs": 10000})
        assert settled["settled"] is True
        assert settled["completed"] == 1 and settled["failed"] == 0
        (record,) = (await client.request("oma/evaluation/records", {}))["records"]
        assert (record["score"], record["reason"]) == (0.0, "no match")
    finally:
        await client.close()


async def test_a_pattern_re2_cannot_run_is_refused_at_initialize() -> None:
    client = await HostClient.spawn(host_argv("--state-dir", ":memory:"))
    try:
        with pytest.raises(RpcError) as caught:
            await client.initialize(
                {
                    "evaluation": {
                        "sample": 1,
                        "scorers": [{"kind": "regex", "pattern": r"(\w)\1"}],
                    }
                }
            )
        assert caught.value.code == -32602
        assert "evaluation.scorers[0]" in caught.value.message
        assert "invalid escape sequence: \\1" in caught.value.message
        assert "no backreferences or lookaround" in caught.value.message
        await client.initialize()  # the refusal left the host ready for another try
    finally:
        assert await client.close() == 0
