"""``oma-host acp`` on whatever stdin and stdout a person gives it, not only
an editor's pipes: answers written to a regular file, input from
``/dev/null`` or a file. Each case ran into a traceback (stdout a file) or a
hang (stdin ``/dev/null``) when the door took the ACP library's stdio
streams."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.acp_server.helpers import TIMEOUT_S, Door

REQUESTS = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
    {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}},
]


def _wait_for_lines(path: Path, count: int) -> list[dict[str, object]]:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines()
        if len(lines) >= count:
            return [json.loads(line) for line in lines]
        time.sleep(0.05)
    raise AssertionError(f"{path} holds {path.read_text()!r}")


def test_answers_go_to_a_regular_file(door: Door) -> None:
    answers = door.tmp / "answers.ndjson"
    with answers.open("wb") as out:
        host = subprocess.Popen(
            door.argv(), stdin=subprocess.PIPE, stdout=out, stderr=subprocess.PIPE, env=door.env
        )
        assert host.stdin is not None
        host.stdin.write(b"".join(json.dumps(r).encode() + b"\n" for r in REQUESTS))
        host.stdin.flush()
        written = _wait_for_lines(answers, 2)
        _, err = host.communicate(timeout=TIMEOUT_S)  # closes stdin: the editor is done
    assert host.returncode == 0, err
    assert [answer["id"] for answer in written] == [1, 2]
    assert written[1]["result"] == {"sessions": []}
    assert b"Traceback" not in err, err


def test_stdin_from_dev_null_or_a_file_ends_the_door_quietly(door: Door) -> None:
    requests = door.tmp / "requests.ndjson"
    requests.write_text("".join(json.dumps(r) + "\n" for r in REQUESTS))
    for stdin in ("/dev/null", str(requests)):
        with open(stdin, "rb") as source:
            done = subprocess.run(
                door.argv(),
                stdin=source,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=door.env,
                timeout=TIMEOUT_S,
                check=False,
            )
        assert done.returncode == 0, (stdin, done.stderr)
        assert b"Traceback" not in done.stderr, done.stderr
