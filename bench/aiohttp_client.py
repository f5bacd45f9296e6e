"""The concurrency benchmark's baseline: aiohttp in a process of its own,
as a program that only sends these requests would run it (default
settings, the collector included), so that neither the benchmark's heap nor
its tuning is measured with it.

It reads one command per line on stdin, ``URL N``: N concurrent POSTs of the
benchmark's Anthropic request to URL on one ``aiohttp.ClientSession`` (1,000
connections, kept for every command), each reply read and parsed as JSON.
For each command it writes one JSON line: ``elapsed_s``, the makespan it
measured itself (from creating the first request to holding the last
reply), and ``failures``, one message per failed request. It ends at the
end of its input.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import aiohttp

if __package__ in (None, ""):  # run as a script: make ``bench`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The floor's request, which is the benchmark's (the floor imports nothing
# the benchmark does, so this process stays as small as a bare program).
from bench.floor_host import BODY, HEADERS


async def burst(session: aiohttp.ClientSession, url: str, n: int) -> tuple[float, list[str]]:
    """N concurrent POSTs to ``url``: the makespan in seconds, and one
    message per failed request."""
    failures: list[str] = []

    async def one() -> None:
        try:
            async with session.post(url, json=BODY, headers=HEADERS) as response:
                body = await response.read()
                if response.status != 200:
                    failures.append(f"HTTP {response.status}")
                json.loads(body)
        except aiohttp.ClientError as error:
            failures.append(f"{type(error).__name__}: {error}")

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return time.perf_counter() - start, failures


async def serve() -> None:
    loop = asyncio.get_running_loop()
    connector = aiohttp.TCPConnector(limit=1000)
    async with aiohttp.ClientSession(connector=connector) as session:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            url, n = line.split()
            elapsed_s, failures = await burst(session, url, int(n))
            report = {"elapsed_s": elapsed_s, "failures": failures}
            sys.stdout.write(json.dumps(report) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
