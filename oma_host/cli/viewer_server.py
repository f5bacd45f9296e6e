"""``oma-host runs serve``: the run viewer, an HTTP server on 127.0.0.1 (aiohttp).

One page shipped with the package (no build step, nothing from the network) and
the JSON it reads, from the state directory's database in a worker thread so a
slow read never stalls the server. Every request passes :mod:`.viewer_guard`
first, and a Content-Security-Policy lets the page run only its own scripts and
talk only to this server.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sqlite3
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from oma_host.cli.viewer_guard import TOKEN_PARAMETER, Verdict, ViewerGuard, is_loopback_host
from oma_host.orchestration.run_records import NoRunDatabase, RunRecords
from oma_host.process.termination import ENDING_SIGNALS
from oma_host.server.tcp_token import (
    TokenFileError,
    new_token,
    read_token_file,
    remove_token_file,
    write_token_file,
)

ASSETS = Path(__file__).with_name("viewer")
_CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
DEFAULT_LIMIT = 200
MAX_LIMIT = 1000
NO_DATABASE = 1
CANNOT_SERVE = 2
_NAME = "oma-host runs serve"
_HEADERS = {
    # The page's own scripts and styles only; fetches to this server only.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_MISSING = (
    "401: the run viewer wants its token. Open the URL `oma-host runs serve` printed "
    "(http://127.0.0.1:PORT/?token=...), or send Authorization: Bearer TOKEN "
    "(the token is in the token file it printed).\n"
)
_WRONG = "403: that is not this run viewer's token.\n"
_NOT_LOOPBACK = (
    "403: this run viewer answers requests for 127.0.0.1, localhost or [::1] only; "
    "the Host header named {host!r}.\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ViewerOptions:
    """The command line's choices."""

    state_dir: str
    port: int
    token_file: str | None = None


def _load_assets() -> dict[str, tuple[bytes, str]]:
    """The page's files by name, read once: a request names one of these,
    never a path."""
    return {
        path.name: (path.read_bytes(), _CONTENT_TYPES[path.suffix])
        for path in sorted(ASSETS.iterdir())
        if path.suffix in _CONTENT_TYPES
    }


def _refusal(status: int, text: str) -> web.Response:
    response = web.Response(status=status, text=text, content_type="text/plain")
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="oma-host runs"'
    return response


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _limit(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_LIMIT
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIMIT:
        raise ValueError(f"limit wants a whole number from 1 to {MAX_LIMIT}, got {value!r}")
    return int(value)


class Viewer:
    """The viewer's handlers over one state directory."""

    def __init__(self, state_dir: str, guard: ViewerGuard) -> None:
        self.state_dir = state_dir
        self.guard = guard
        self.assets = _load_assets()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guarded])
        app.router.add_get("/", self.page)
        app.router.add_get("/static/{name}", self.asset)
        app.router.add_get("/api/runs", self.list_runs)
        app.router.add_get("/api/runs/{run_id}", self.one_run)
        app.on_response_prepare.append(_secure_headers)
        return app

    @web.middleware
    async def _guarded(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host")
        if not is_loopback_host(host):
            return _refusal(403, _NOT_LOOPBACK.format(host=host))
        verdict = self.guard.url_token(request.query)
        if verdict is Verdict.ALLOWED:
            # Trade the URL's token for the cookie, and take it off the URL.
            rest = [(k, v) for k, v in request.query.items() if k != TOKEN_PARAMETER]
            response = web.Response(status=303)
            response.headers["Location"] = str(request.rel_url.with_query(rest))
            response.set_cookie(
                self.guard.cookie_name,
                self.guard.cookie_value,
                path="/",
                httponly=True,
                samesite="Strict",
            )
            return response
        if verdict is None:
            verdict = self.guard.credentials(request.headers, request.cookies)
        if verdict is Verdict.MISSING:
            return _refusal(401, _MISSING)
        if verdict is Verdict.WRONG:
            return _refusal(403, _WRONG)
        return await handler(request)

    async def page(self, request: web.Request) -> web.Response:
        return self._asset("index.html")

    async def asset(self, request: web.Request) -> web.Response:
        return self._asset(request.match_info["name"])

    def _asset(self, name: str) -> web.Response:
        found = self.assets.get(name)
        if found is None:
            return _refusal(404, f"404: no file {name!r} in the viewer\n")
        body, content_type = found
        return web.Response(body=body, content_type=content_type, charset="utf-8")

    async def list_runs(self, request: web.Request) -> web.Response:
        query = request.query
        try:
            limit = _limit(query.get("limit"))
        except ValueError as error:
            return _error(400, str(error))

        def read(records: RunRecords) -> dict[str, Any]:
            rows = records.list_runs(
                agent=query.get("agent") or None,
                status=query.get("status") or None,
                text=query.get("text") or None,
                limit=limit,
            )
            return {
                "runs": records.runs_json(rows),
                "agents": records.agents(),
                "statuses": records.statuses(),
            }

        return await self._read(read)

    async def one_run(self, request: web.Request) -> web.Response:
        run_id = request.match_info["run_id"]

        def read(records: RunRecords) -> dict[str, Any] | None:
            run = records.run(run_id)
            if run is None:
                return None
            return {
                "run": run.to_json(),
                "spans": [node.to_json() for node in records.span_tree(run)],
                "evaluations": records.evaluations(run.run_id),
            }

        return await self._read(read, missing=f"no run {run_id!r} in {self.state_dir}")

    async def _read(
        self, read: Callable[[RunRecords], dict[str, Any] | None], missing: str = ""
    ) -> web.Response:
        def in_thread() -> dict[str, Any] | None:
            with RunRecords(self.state_dir) as records:
                return read(records)

        try:
            document = await asyncio.to_thread(in_thread)
        except NoRunDatabase as error:
            return _error(503, str(error))
        except sqlite3.Error as error:
            return _error(503, f"the database could not be read: {error}")
        if document is None:
            return _error(404, missing)
        return web.json_response(document)


async def _secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    response.headers.update(_HEADERS)


def _say(line: str) -> None:
    print(f"{_NAME}: {line}", file=sys.stderr, flush=True)


async def _serve(listener: socket.socket, viewer: Viewer, token: str) -> None:
    port = int(listener.getsockname()[1])
    runner = web.AppRunner(viewer.app(), access_log=None, handle_signals=False)
    await runner.setup()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    token_file: Path | None = None
    for signum in ENDING_SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        await web.SockSite(runner, listener).start()
        token_file = write_token_file(port, token, kind="runs")
        _say(f"the runs of {viewer.state_dir}")
        _say(f"open http://127.0.0.1:{port}/?{TOKEN_PARAMETER}={token}")
        _say(f"token file {token_file}; Ctrl-C stops")
        await stop.wait()
    finally:
        for signum in ENDING_SIGNALS:
            loop.remove_signal_handler(signum)
        if token_file is not None:
            remove_token_file(token_file)
        await runner.cleanup()


def serve_viewer(options: ViewerOptions) -> int:
    """Serve the viewer until SIGTERM or SIGHUP (0) or Ctrl-C (KeyboardInterrupt,
    which the command line turns into 130). A state directory with no
    database ends with status 1, a token file or port that cannot be used
    with 2, each with the reason."""
    try:
        RunRecords(options.state_dir).close()
    except NoRunDatabase as error:
        _say(str(error))
        return NO_DATABASE
    try:
        token = read_token_file(Path(options.token_file)) if options.token_file else new_token()
    except FileNotFoundError:
        _say(f"the token file {options.token_file} does not exist")
        return CANNOT_SERVE
    except TokenFileError as error:
        _say(str(error))
        return CANNOT_SERVE
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", options.port))
        listener.listen(128)
    except OSError as error:
        listener.close()
        _say(f"cannot listen on 127.0.0.1:{options.port}: {error.strerror}")
        return CANNOT_SERVE
    with contextlib.closing(listener):
        port = int(listener.getsockname()[1])
        viewer = Viewer(options.state_dir, ViewerGuard(token, port))
        asyncio.run(_serve(listener, viewer, token))
    return 0
