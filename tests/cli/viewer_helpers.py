"""``oma-host runs serve`` as a real process for the viewer's tests: started
on a state directory, its URL and token read from what it prints, ended
with SIGTERM (it must exit 0 and remove its token file); and plain HTTP
requests to it with any Host header, cookie or Authorization."""

from __future__ import annotations

import http.client
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 30
_URL = re.compile(r"open (http://127\.0\.0\.1:(\d+)/)\?token=(\S+)")
_TOKEN_FILE = re.compile(r"token file (\S+);")


@dataclass(frozen=True)
class Viewer:
    """A running viewer: its base URL (``http://127.0.0.1:PORT/``), port,
    token and token file."""

    base: str
    port: int
    token: str
    token_file: Path

    @property
    def url(self) -> str:
        """The URL the command prints: the page with its token."""
        return f"{self.base}?token={self.token}"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: str


def viewer_argv(state: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "oma_host", "runs", "--state-dir", str(state), "serve", *args]


@contextmanager
def serve_viewer(state: Path, log: Path, *args: str) -> Iterator[Viewer]:
    """``oma-host runs serve`` on ``state`` (its stderr to ``log``) until the block ends."""
    with log.open("w") as stderr:
        process = subprocess.Popen(
            viewer_argv(state, *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            printed = log.read_text()
            found = _URL.search(printed)
            token_file = _TOKEN_FILE.search(printed)
            if found and token_file:
                break
            assert process.poll() is None, f"the viewer ended: {printed}"
            assert time.monotonic() < deadline, f"the viewer printed no URL: {printed}"
            time.sleep(0.05)
        viewer = Viewer(found[1], int(found[2]), found[3], Path(token_file[1]))
        yield viewer
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
        try:
            status = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise AssertionError("the viewer did not stop on SIGTERM") from None
    assert status == 0, log.read_text()
    assert not viewer.token_file.exists(), "the token file outlived the viewer"


def get(
    viewer: Viewer,
    path: str,
    *,
    host: str | None = None,
    bearer: str | None = None,
    authorization: str | None = None,
    cookie: str | None = None,
) -> Answer:
    """GET ``path`` from the viewer, with these headers (Host by default
    ``127.0.0.1:PORT``; ``bearer``: Authorization ``Bearer BEARER``)."""
    if bearer is not None:
        authorization = f"Bearer {bearer}"
    connection = http.client.HTTPConnection("127.0.0.1", viewer.port, timeout=30)
    try:
        connection.putrequest("GET", path, skip_host=True)
        connection.putheader("Host", host or f"127.0.0.1:{viewer.port}")
        if authorization is not None:
            connection.putheader("Authorization", authorization)
        if cookie is not None:
            connection.putheader("Cookie", cookie)
        connection.endheaders()
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read().decode())
    finally:
        connection.close()
