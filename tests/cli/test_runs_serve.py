"""``oma-host runs serve`` over plain HTTP, as a real process on a state
directory made by real runs (``recorded``): the token rule (nothing without
it, a wrong one refused, the URL's token traded for a cookie), loopback Host
headers only, the JSON API against ``oma-host runs list|show --json``, the
token file, and the start-up errors. The page itself: test_run_viewer_page.py."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
from collections.abc import Iterator
from http.client import HTTPMessage
from http.cookies import SimpleCookie
from pathlib import Path

import pytest

from oma_host.server.tcp_token import new_token
from tests.cli.recorded_runs import KEY, oma_runs, show_json
from tests.cli.viewer_helpers import Viewer, get, serve_viewer, viewer_argv


@pytest.fixture(scope="module")
def viewer(
    recorded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Viewer]:
    state, _runs = recorded
    with serve_viewer(state, tmp_path_factory.mktemp("viewer") / "stderr") as running:
        yield running


def _paths(runs: dict[str, str]) -> list[str]:
    return ["/", "/static/app.js", "/api/runs", f"/api/runs/{runs['tools']}"]


def _no_data(body: str, runs: dict[str, str]) -> None:
    for run_id in runs.values():
        assert run_id not in body
    for agent in ("coder", "markup-agent", "<script"):
        assert agent not in body


def _cookie(headers: HTTPMessage, name: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    for header in headers.get_all("Set-Cookie") or []:
        jar.load(header)
    return jar[name].value


def test_a_request_without_the_token_gets_401_and_no_data(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    for path in _paths(runs):
        answer = get(viewer, path)
        assert answer.status == 401, (path, answer)
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert "Open the URL `oma-host runs serve` printed" in answer.body
        _no_data(answer.body, runs)


def test_a_wrong_token_cookie_or_bearer_gets_403_and_no_data(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    wrong = new_token()
    for path in _paths(runs):
        for answer in (
            get(viewer, path, bearer=wrong),
            get(viewer, path, bearer=""),
            get(viewer, path, cookie=f"oma-runs-{viewer.port}={wrong}"),
            # The token itself is not the cookie's value: the cookie is a key of its own.
            get(viewer, path, cookie=f"oma-runs-{viewer.port}={viewer.token}"),
            get(viewer, f"{path}?token={wrong}", bearer=viewer.token),
        ):
            assert answer.status == 403, (path, answer)
            assert answer.body == "403: that is not this run viewer's token.\n"
    # The token by another scheme is not taken.
    basic = get(viewer, "/api/runs", authorization=f"Basic {viewer.token}")
    assert basic.status == 403


def test_the_url_token_is_traded_for_an_http_only_strict_cookie(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    answer = get(viewer, f"/?token={viewer.token}")
    assert answer.status == 303 and answer.headers["Location"] == "/"
    _no_data(answer.body, runs)
    (set_cookie,) = answer.headers.get_all("Set-Cookie") or []
    attributes = {part.strip().split("=")[0].lower() for part in set_cookie.split(";")}
    assert {"httponly", "path", "samesite"} <= attributes
    assert "samesite=strict" in set_cookie.lower()
    name = f"oma-runs-{viewer.port}"
    value = _cookie(answer.headers, name)
    assert value != viewer.token and len(value) >= 32
    page = get(viewer, "/", cookie=f"{name}={value}")
    assert page.status == 200 and '<script type="module" src="/static/app.js">' in page.body
    assert "script-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    script = get(viewer, "/static/app.js", cookie=f"{name}={value}")
    assert script.status == 200 and script.headers["Content-Type"].startswith("text/javascript")
    # Other parameters stay on the URL the redirect gives.
    filtered = get(viewer, f"/api/runs?agent=coder&token={viewer.token}")
    assert filtered.status == 303 and filtered.headers["Location"] == "/api/runs?agent=coder"


def test_a_host_header_not_naming_the_loopback_is_refused(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    for host in (
        f"evil.example:{viewer.port}",
        "evil.example",
        f"127.0.0.1.evil.example:{viewer.port}",
        f"localhost.evil.example:{viewer.port}",
        f"[::2]:{viewer.port}",
        "",
    ):
        for path in (*_paths(runs), f"/?token={viewer.token}"):
            answer = get(viewer, path, host=host or " ", bearer=viewer.token)
            assert answer.status == 403, (host, path, answer)
            assert "answers requests for 127.0.0.1, localhost or [::1] only" in answer.body
            assert "Set-Cookie" not in answer.headers
            _no_data(answer.body, runs)
    for host in (f"localhost:{viewer.port}", f"[::1]:{viewer.port}", f"LOCALHOST:{viewer.port}"):
        assert get(viewer, "/api/runs", host=host, bearer=viewer.token).status == 200, host


def test_the_api_gives_what_runs_list_and_show_give(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]]
) -> None:
    state, runs = recorded

    def api(path: str) -> tuple[int, dict[str, object]]:
        answer = get(viewer, path, bearer=viewer.token)
        assert answer.headers["Content-Type"].startswith("application/json")
        document: dict[str, object] = json.loads(answer.body)
        return answer.status, document

    status, listed = api("/api/runs")
    assert status == 200
    cli = json.loads(oma_runs(state, "list", "--json", "--limit", "100").stdout)
    assert listed["runs"] == cli
    assert "coder" in listed["agents"] and "team" in listed["agents"]  # type: ignore[operator]
    assert listed["statuses"] == ["cancelled", "error", "ok"]
    for query, expected in (
        ("agent=coder", {runs["tools"]}),
        ("status=cancelled", {runs["cancelled"]}),
        ("text=X-API-KEY", {runs["failed"]}),
        ("agent=team&text=diamond", {runs["diamond"]}),
        ("text=%25", set()),  # taken literally
    ):
        _, found = api(f"/api/runs?{query}")
        assert {row["runId"] for row in found["runs"]} == expected, query  # type: ignore[attr-defined]
    _, one = api("/api/runs?limit=1")
    assert len(one["runs"]) == 1  # type: ignore[arg-type]
    for bad in ("0", "x", "1001"):
        status, error = api(f"/api/runs?limit={bad}")
        assert status == 400 and "limit wants a whole number from 1 to 1000" in str(error["error"])
    for name in ("tools", "delegation", "team", "evaluated"):
        status, shown = api(f"/api/runs/{runs[name]}")
        assert status == 200 and shown == show_json(state, runs[name]), name
    status, missing = api("/api/runs/run_nope")
    assert status == 404 and missing == {"error": f"no run 'run_nope' in {state}"}
    # No key in anything the API gives.
    assert KEY not in get(viewer, "/api/runs", bearer=viewer.token).body


def test_the_token_is_kept_in_a_private_file_and_a_token_file_is_used(
    viewer: Viewer, recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    assert viewer.token_file.name == f"runs-{viewer.port}.token"
    mode = os.stat(viewer.token_file).st_mode
    assert stat.S_IMODE(mode) == 0o600
    assert viewer.token_file.read_text().strip() == viewer.token
    state, _runs = recorded
    token = new_token()
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    with serve_viewer(state, tmp_path / "stderr", "--token-file", str(token_file)) as own:
        assert own.token == token and own.port != viewer.port
        assert get(own, "/api/runs", bearer=token).status == 200
        # The other viewer's cookie and token are no good here.
        assert get(own, "/api/runs", bearer=viewer.token).status == 403


def test_a_bad_token_file_a_missing_database_or_a_taken_port_is_said_clearly(
    recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    state, _runs = recorded

    def serve(*args: str, where: Path = state) -> subprocess.CompletedProcess[str]:
        return subprocess.run(viewer_argv(where, *args), capture_output=True, text=True, timeout=60)

    empty = serve(where=tmp_path)
    assert empty.returncode == 1 and f"no runs recorded in {tmp_path}" in empty.stderr
    short = tmp_path / "short"
    short.write_text("abc")
    short.chmod(0o600)
    done = serve("--token-file", str(short))
    assert done.returncode == 2 and "a token must have at least 32" in done.stderr
    open_file = tmp_path / "open"
    open_file.write_text(new_token())
    open_file.chmod(0o644)
    done = serve("--token-file", str(open_file))
    assert done.returncode == 2 and "is open to other users" in done.stderr
    done = serve("--token-file", str(tmp_path / "nope"))
    assert done.returncode == 2 and "does not exist" in done.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve("--port", str(port))
    assert done.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    done = serve("--port", "70000")
    assert done.returncode == 2 and "--port: 70000 is not between 0 and 65535" in done.stderr
