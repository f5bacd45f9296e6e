"""``oma-host acp`` answers ``initialize`` from its one reading of the agents
file, before the configs are checked: the answer an editor gets, the
requests served after it, and a bad file refusing sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp.schema import InitializeResponse

from oma_host.acp_server.agents import read_agents, serve_reading
from oma_host.core import provider_table

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60
TERMINAL = {"auth": {"terminal": True}}
KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
)
LIST = b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'


def _initialize(request_id: Any = 1, capabilities: Any = None) -> bytes:
    params = {"protocolVersion": 1, "clientCapabilities": capabilities or {}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


def _env(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env.pop("OMA_HOST_TEST_PROVIDER", None)  # the test provider offered: set by a test alone
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONPATH=str(ROOT), **variables)
    return env


def _agents(tmp_path: Path, agents: Any) -> str:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(agents))
    return str(path)


def _answers(
    args: list[str], stdin: bytes, env: dict[str, str]
) -> tuple[list[dict[str, Any]], str]:
    """The door's answers to the requests in ``stdin`` in the order written
    (read before stdin is closed: its end cancels what is still running),
    and its stderr; it exits 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "oma_host", "acp", *args, "--state-dir", ":memory:"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(stdin)
    process.stdin.flush()
    answers = [json.loads(process.stdout.readline()) for _ in range(stdin.count(b"\n"))]
    _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0, stderr.decode()
    return answers, stderr.decode()


def _ids(answer: dict[str, Any]) -> list[str]:
    return [method["id"] for method in answer["result"]["authMethods"]]


AGENT_FILES: dict[str, tuple[list[dict[str, Any]], list[str]]] = {
    "each provider": (
        [
            {"name": "a", "provider": "anthropic", "model": "m"},
            {"name": "o", "provider": "openai", "model": "m"},
            {"name": "g", "provider": "gemini", "model": "m"},
            {"name": "z", "provider": "azure", "model": "m", "baseURL": "https://x.example/v1"},
            {"name": "b", "provider": "bedrock", "model": "m"},
        ],
        [
            "env:ANTHROPIC_API_KEY",
            "env:AWS_ACCESS_KEY_ID+AWS_SECRET_ACCESS_KEY",
            "env:AWS_BEARER_TOKEN_BEDROCK",
            "env:AZURE_OPENAI_AD_TOKEN",
            "env:AZURE_OPENAI_API_KEY",
            "env:GEMINI_API_KEY",
            "env:GOOGLE_API_KEY",
            "env:OPENAI_API_KEY",
        ],
    ),
    "no provider named": ([{"name": "a", "model": "m"}], ["env:ANTHROPIC_API_KEY"]),
    "own keys": (
        [
            {"name": "k", "provider": "openai", "model": "m", "apiKey": "sk-own"},
            {"name": "e", "provider": "gemini", "model": "m", "apiKeyEnv": "MY_GEMINI"},
            {"name": "s", "provider": "openai", "model": "m", "api_key_env": "SNAKE_KEY"},
        ],
        ["env:MY_GEMINI", "env:SNAKE_KEY"],
    ),
    "external agents only": (
        [
            {"name": "p", "backend": {"kind": "process", "command": "cat"}},
            {"name": "q", "backend": {"kind": "acp", "command": "gemini", "args": ["--acp"]}},
        ],
        [],
    ),
    "mixed": (
        [
            {"name": "p", "backend": {"kind": "process", "command": "cat"}},
            {"name": "a", "provider": "anthropic", "model": "m", "apiKeyEnv": ""},
        ],
        ["env:ANTHROPIC_API_KEY"],
    ),
}


@pytest.mark.parametrize("case", list(AGENT_FILES))
@pytest.mark.parametrize("capabilities", [{}, TERMINAL])
def test_the_answer_offers_the_auth_methods_the_agents_keys_need(
    tmp_path: Path, case: str, capabilities: dict[str, Any]
) -> None:
    """The ``terminal`` login first to a client that runs it (when any key is
    needed), then each ``env_var`` method by id; the answer is the schema's
    ``InitializeResponse``, and the door serves the agents it was made for."""
    agents, expected = AGENT_FILES[case]
    path = _agents(tmp_path, agents)
    (answer, listed), _ = _answers(
        ["--agents", path], _initialize(7, capabilities) + LIST, _env(tmp_path)
    )
    assert answer["id"] == 7
    login = ["oma-host-login"] if capabilities and expected else []
    assert _ids(answer) == login + expected
    model = InitializeResponse.model_validate(answer["result"])
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_unset=True)
    assert dumped == answer["result"]
    assert listed == {"jsonrpc": "2.0", "id": 2, "result": {"sessions": []}}


@pytest.mark.parametrize(
    ("keys", "logged_in", "expected"),
    [
        ({}, None, ["env:ANTHROPIC_API_KEY"]),
        ({"OPENAI_API_KEY": "sk-o"}, None, ["env:OPENAI_API_KEY"]),
        ({"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "sk-o"}, None, ["env:OPENAI_API_KEY"]),
        ({"GOOGLE_API_KEY": "g"}, None, ["env:GEMINI_API_KEY", "env:GOOGLE_API_KEY"]),
        # An empty variable counts as unset; a key kept by oma-host login counts.
        ({"ANTHROPIC_API_KEY": ""}, "GEMINI_API_KEY", ["env:GEMINI_API_KEY", "env:GOOGLE_API_KEY"]),
        ({"OPENAI_API_KEY": "sk-o"}, "ANTHROPIC_API_KEY", ["env:ANTHROPIC_API_KEY"]),
    ],
)
def test_without_an_agents_file_the_default_agent_is_for_the_key_that_is_set(
    tmp_path: Path, keys: dict[str, str], logged_in: str | None, expected: list[str]
) -> None:
    if logged_in is not None:  # as oma-host login keeps a key in the file store
        folder = tmp_path / "config" / "oma-host"
        folder.mkdir(parents=True)
        (folder / "logins.json").write_text(json.dumps({logged_in: "file"}))
        (folder / "credentials.json").write_text(json.dumps({logged_in: "kept"}))
    (answer,), _ = _answers([], _initialize(1, TERMINAL), _env(tmp_path, **keys))
    assert _ids(answer) == ["oma-host-login", *expected]


def test_the_users_agents_file_is_read_when_no_file_is_given(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "oma-host"
    folder.mkdir(parents=True)
    (folder / "agents.json").write_text(json.dumps(AGENT_FILES["own keys"][0]))
    (answer,), _ = _answers([], _initialize(), _env(tmp_path))
    assert _ids(answer) == ["env:MY_GEMINI", "env:SNAKE_KEY"]


def test_initialize_is_answered_before_the_configs_checks_are_imported(tmp_path: Path) -> None:
    """pydantic, asyncio, the ACP library, argparse and ``re`` take more than
    the interpreter's start to import: none is loaded when the answer is written."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import oma_host.acp_server.handshake as handshake\n"
        "write = handshake._write_all\n"
        "def report(data):\n"
        "    print(' '.join(sorted(set(sys.modules) - before)), file=sys.stderr)\n"
        "    write(data)\n"
        "handshake._write_all = report\n"
        "from oma_host.cli.main import main\n"
        "sys.exit(main())\n"
    )
    path = _agents(tmp_path, AGENT_FILES["each provider"][0])
    done = subprocess.run(
        [sys.executable, "-c", probe, "acp", "--agents", path, "--state-dir", ":memory:"],
        input=_initialize(),
        capture_output=True,
        env=_env(tmp_path),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.splitlines()[0])["result"]["authMethods"]
    loaded = set(done.stderr.decode().splitlines()[0].split())
    assert "oma_host.acp_server.agents" in loaded
    heavy = {"pydantic", "asyncio", "acp", "argparse", "re", "typing", "oma_host.core.config"}
    assert not heavy & loaded, heavy & loaded


@pytest.mark.parametrize(
    ("agents", "problem"),
    [
        ([{"name": "a", "provider": "openai", "model": "m", "maxTurns": "9"}], "$[0].maxTurns"),
        ([{"name": "t", "provider": "test", "model": "echo"}], "$[0].provider"),  # not offered
        ([{"name": "x", "provider": "nosuch", "model": "m"}], "$[0].provider"),
        ([{"name": "x", "provider": 3, "model": "m"}], "$[0].provider"),
        ([], "$ must be a non-empty array of agent configs"),
        ({"name": "not an array"}, "$ must be a non-empty array of agent configs"),
    ],
)
def test_an_invalid_file_is_reported_to_the_editor_after_the_answer(
    tmp_path: Path, agents: Any, problem: str
) -> None:
    """The door does not end: ``initialize`` is answered, every session
    request is refused with the file, the JSON path and the problem, and
    stderr says it once."""
    path = _agents(tmp_path, agents)
    (answered, listed), stderr = _answers(["--agents", path], _initialize() + LIST, _env(tmp_path))
    assert answered["id"] == 1 and "result" in answered
    assert listed["id"] == 2 and listed["error"]["code"] == -32602
    assert f"{path}: {problem}" in listed["error"]["message"]
    (line,) = stderr.splitlines()
    assert f"no session can start: {path}: {problem}" in line


def test_a_file_that_does_not_parse_is_reported_to_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text("[{")
    later = (
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n'
    )
    (answered, refused), _ = _answers(
        ["--agents", str(path)], _initialize() + later, _env(tmp_path)
    )
    assert answered["result"]["authMethods"] == []  # no agents: nothing to log in to
    assert refused["error"]["code"] == -32602
    assert f"{path}: not valid JSON" in refused["error"]["message"]


@pytest.mark.parametrize(
    ("first", "answer"),
    [
        (  # what only the schema's model takes: the same answer
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
            b'"clientCapabilities":{"_meta":{"x":1}}}}\n',
            "result",
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
            b'"clientInfo":{"name":"\\ud800","version":"1"}}}\n',
            "error",
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n', "error"),
    ],
)
def test_a_first_request_that_is_not_a_plain_initialize_is_served_by_the_door(
    tmp_path: Path, first: bytes, answer: str
) -> None:
    path = _agents(tmp_path, AGENT_FILES["no provider named"][0])
    (initialized, listed), _ = _answers(["--agents", path], first + LIST, _env(tmp_path))
    assert initialized["id"] == 1 and answer in initialized, initialized
    if answer == "result":
        assert _ids(initialized) == ["env:ANTHROPIC_API_KEY"]
    else:
        assert initialized["error"]["code"] == -32602
    assert listed["result"] == {"sessions": []}


def test_requests_sent_with_the_initialize_are_served_after_it(tmp_path: Path) -> None:
    """One write holding ``initialize`` and two more requests: the answer is
    written first, and the door serves what was read past its line."""
    path = _agents(tmp_path, AGENT_FILES["no provider named"][0])
    later = (
        LIST + b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    (first, *rest), _ = _answers(["--agents", path], _initialize() + later, _env(tmp_path))
    assert first["id"] == 1
    # The two after it are served concurrently: in either order.
    listed, again = sorted(rest, key=lambda answer: int(answer["id"]))
    assert listed["result"] == {"sessions": []}
    assert again["result"] == first["result"]


def test_the_configs_checked_are_the_bytes_the_answer_was_made_from(tmp_path: Path) -> None:
    """A file replaced between the answer and the checks: the door serves the
    agents it advertised, never the file as it is now."""
    path = _agents(tmp_path, [{"name": "answered", "provider": "openai", "model": "m"}])
    reading = read_agents(path)
    _agents(tmp_path, [{"name": "replaced", "provider": "gemini", "model": "m"}])
    served = serve_reading(reading)
    assert [config.name for config in served.configs] == ["answered"]
    assert list(served.auth_methods) == ["env:OPENAI_API_KEY"]


def test_the_provider_table_is_the_descriptors() -> None:
    """The providers' facts the start reads as JSON are the descriptors'."""
    text = Path(provider_table.TABLE_PATH).read_text(encoding="utf-8")
    assert text == provider_table.build(), "run python3 -m oma_host.core.provider_table"
