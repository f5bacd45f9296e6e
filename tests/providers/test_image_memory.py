"""Peak memory of the host for a 60 MB image run (the hardening issue asks it
be recorded): one `agent/run` whose input holds a 60 MB base64 image goes
through the guard, the copy and the Anthropic adapter to the simulator. The
host's peak resident set (``VmHWM``) is recorded on stdout and bounded
generously: strings are shared, never copied per layer, so the peak stays a
small multiple of the payload."""

from __future__ import annotations

from typing import Any

from oma_host.testing.simulator import Reply, Simulator
from tests.builders import image, text
from tests.providers.helpers import create_llm
from tests.server.helpers import HostFactory, peak_rss_bytes

IMAGE_BYTES = 60 * 1024 * 1024
# Parsed input, the request body the adapter serialises, and httpx's send
# buffer can each hold the payload once; more than this would mean a copy per
# layer (the guard, a hook, the trace, the history).
PEAK_BOUND_BYTES = 8 * IMAGE_BYTES


async def test_a_60_mb_image_run_keeps_the_host_within_a_few_copies(
    spawn_host: HostFactory,
    host_variables: dict[str, str],
    host_options: dict[str, Any],
    sim: Simulator,
) -> None:
    host = await spawn_host(env=host_variables, options=host_options)
    assert host.process is not None
    sim.script(Reply.text("a very large picture"))
    agent_id = await create_llm(host, sim, "anthropic")
    before = peak_rss_bytes(host.process.pid)
    data = "A" * IMAGE_BYTES  # valid base64 of the right size; the simulator only records it
    message = {"role": "user", "content": [text("what is this?"), image(data)]}
    result = await host.request("agent/run", {"agentId": agent_id, "input": [message]}, timeout=120)
    assert result["success"], result["status"]
    sent = sim.requests[-1].body["messages"][0]["content"][1]["source"]["data"]
    assert len(sent) == IMAGE_BYTES
    peak = peak_rss_bytes(host.process.pid)
    print(
        f"\nhost peak RSS for a {IMAGE_BYTES // 2**20} MB image run: {peak / 2**20:.0f} MB "
        f"({peak / IMAGE_BYTES:.1f}x the payload; {before / 2**20:.0f} MB before the run)"
    )
    assert peak < PEAK_BOUND_BYTES, f"peak {peak / 2**20:.0f} MB"
