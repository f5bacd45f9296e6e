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

import aiohttp

# The floor's request, which is the benchmark's (run as a script, this
# directory is on the path; the floor imports nothing the benchmark does).
from floor_host import BODY, HEADERS


async def burst(session: aiohttp.ClientSession, url: str, n: int) -> dict[str, object]:
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
    return {"elapsed_s": time.perf_counter() - start, "failures": failures}


async def serve() -> None:
    loop = asyncio.get_running_loop()
    connector = aiohttp.TCPConnector(limit=1000)
    async with aiohttp.ClientSession(connector=connector) as session:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            url, n = line.split()
            report = await burst(session, url, int(n))
            sys.stdout.write(json.dumps(report) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(serve())
