"""``python3 -m oma_host.testing.simulator`` as a person runs it: its
``--help`` says what it answers unscripted and how to point an agent at it,
and an agent configured the way the help says gets that answer from a real
host, in each provider's wire format."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

SIMULATOR = [sys.executable, "-m", "oma_host.testing.simulator"]
HOST_CALL = [sys.executable, "-m", "oma_host", "call"]
# "message(s)" or, on the Responses wire (Azure's), "input item(s)".
ANSWER = re.compile(r"simulator saw 1 [a-z ]+\(s\); the last user message holds: text 'hi'")


@pytest.fixture(scope="module")
def simulator_url() -> Iterator[str]:
    process = subprocess.Popen(
        [*SIMULATOR, "--port", "0"], stdout=subprocess.PIPE, text=True, bufsize=1
    )
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        found = re.fullmatch(r"simulator listening on (http://127\.0\.0\.1:\d+)\n", banner)
        assert found, banner
        yield found.group(1)
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_help_says_what_it_answers_and_how_to_point_an_agent_at_it() -> None:
    shown = subprocess.run([*SIMULATOR, "--help"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "Unscripted, it answers every POST" in shown.stdout
    assert '"baseURL": "http://127.0.0.1:8765"' in shown.stdout
    assert '"baseURL": "http://127.0.0.1:8765/v1"' in shown.stdout


@pytest.mark.parametrize(
    ("provider", "path"),
    [("anthropic", ""), ("openai", "/v1"), ("gemini", ""), ("azure", ""), ("bedrock", "")],
)
def test_an_agent_set_up_as_the_help_says_gets_the_unscripted_answer(
    simulator_url: str, provider: str, path: str
) -> None:
    config = {
        "name": "sim",
        "provider": provider,
        "model": "sim-1",
        "baseURL": simulator_url + path,
        "apiKey": "any",
    }
    if provider == "bedrock":  # signed with AWS credentials, not an apiKey
        del config["apiKey"]
    aws = {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "any",
        "AWS_REGION": "us-east-1",
    }
    env = {**os.environ, **aws}
    for streamed in ("agent/run", "agent/stream"):
        done = subprocess.run(
            [*HOST_CALL, streamed, json.dumps({"input": "hi"}), "--agent", json.dumps(config)],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert ANSWER.fullmatch(json.loads(done.stdout)["output"]), done.stdout
