"""The history-growth benchmark's apparatus (``bench/history_growth.py``):
each plain POST it times sends the very conversation the host's turn sent,
whichever of the two goes first, and the host's CPU time is read."""

from __future__ import annotations

from pathlib import Path

import httpx

from bench.history_growth import ANSWER, KEY, Session, _cpu_s
from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.simulator import Reply, Simulator
from tests.providers.helpers import without_cache_marks


async def test_each_plain_post_sends_the_conversation_its_turn_sent(tmp_path: Path) -> None:
    with Simulator() as sim:
        sim.responder = lambda request: Reply.text(ANSWER)
        host = await HostClient.spawn(host_argv("--state-dir", str(tmp_path)))
        http = httpx.AsyncClient()
        try:
            await host.initialize()
            assert host.process is not None
            config = {
                "name": "growing",
                "provider": "anthropic",
                "model": "sim",
                "baseURL": sim.base_url,
                "apiKey": KEY,
            }
            created = await host.request("agent/create", {"config": config, "sessionId": "s"})
            session = Session(host, host.process.pid, created["agentId"])
            costs = [await session.pair(http, f"{sim.base_url}/v1/messages") for _ in range(4)]
        finally:
            await http.aclose()
            await host.close()
    assert all(cost.turn_cpu > 0 and cost.post_cpu > 0 for cost in costs)
    # Each pair's two requests (in the order they went: the turn's first,
    # then the POST's first, alternately) carry the same conversation.
    bodies = [without_cache_marks(request.body["messages"]) for request in sim.requests]
    pairs = [(bodies[index], bodies[index + 1]) for index in range(0, len(bodies), 2)]
    assert len(pairs) == 4 and all(turn == post for turn, post in pairs)
    assert [len(turn) for turn, _ in pairs] == [1, 3, 5, 7]


def test_the_cpu_time_of_a_process_is_read_from_its_threads() -> None:
    import os

    first = _cpu_s(os.getpid())
    sum(range(2_000_000))
    assert _cpu_s(os.getpid()) > first > 0
