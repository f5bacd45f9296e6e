"""``oma-host acp``'s early answer (``oma_host.acp_server.early``): a plain
``initialize`` answered before anything heavy is imported, with the answer
the checked configs give, and the door going on from there; and everything
the early answer does not read exactly left to the door as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.acp_server.agents import load_agents
from oma_host.acp_server.auth import initialize_answer
from oma_host.cli import provider_auth_table
from oma_host.cli.main import build_parser
from oma_host.core.cli_options import ACP_FLAGS, ACP_OPTIONS

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

# Called as the entry point calls it, in a fresh interpreter: what it
# returned and every module imported by then.
_PROBE = (
    "import sys\n"
    "before = set(sys.modules)\n"
    "from oma_host.acp_server.early import answer_early\n"
    "early = answer_early(sys.argv[1:])\n"
    "imported = sorted(set(sys.modules) - before)\n"
    "import json\n"
    "print(json.dumps({'answered': early is not None and early.answer is not None,\n"
    "  'pending': early.pending.decode() if early else None, 'imported': imported}),\n"
    "  file=sys.stderr)\n"
)


def _initialize(request_id: Any = 1, capabilities: Any = None) -> bytes:
    params = {"protocolVersion": 1, "clientCapabilities": capabilities or {}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


def _env(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    env.pop("OMA_HOST_TEST_PROVIDER", None)  # the test provider offered: set by a test alone
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), PYTHONPATH=str(ROOT), **variables)
    return env


def _probe(
    args: list[str], stdin: bytes, env: dict[str, str]
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Run the early answer on ``args`` and ``stdin``: the answer it wrote
    (None: none) and its report."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    report = json.loads(done.stderr.decode().splitlines()[-1])
    written = done.stdout.decode()
    return (json.loads(written) if written else None), report


def _agents(tmp_path: Path, agents: list[dict[str, Any]]) -> str:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(agents))
    return str(path)


AGENT_FILES: dict[str, list[dict[str, Any]]] = {
    "each provider": [
        {"name": "a", "provider": "anthropic", "model": "m"},
        {"name": "o", "provider": "openai", "model": "m"},
        {"name": "g", "provider": "gemini", "model": "m"},
        {"name": "z", "provider": "azure", "model": "m", "baseURL": "https://x.example/openai/v1"},
        {"name": "b", "provider": "bedrock", "model": "m"},
    ],
    "no provider named": [{"name": "a", "model": "m"}],
    "own keys": [
        {"name": "k", "provider": "openai", "model": "m", "apiKey": "sk-own"},
        {"name": "e", "provider": "gemini", "model": "m", "apiKeyEnv": "MY_GEMINI"},
        {"name": "s", "provider": "openai", "model": "m", "api_key_env": "SNAKE_KEY"},
    ],
    "external agents only": [
        {"name": "p", "backend": {"kind": "process", "command": "cat"}},
        {"name": "q", "backend": {"kind": "acp", "command": "gemini", "args": ["--acp"]}},
    ],
    "mixed": [
        {"name": "p", "backend": {"kind": "process", "command": "cat"}},
        {"name": "a", "provider": "anthropic", "model": "m", "apiKeyEnv": ""},
    ],
}


@pytest.mark.parametrize("case", list(AGENT_FILES))
@pytest.mark.parametrize("capabilities", [{}, TERMINAL])
def test_the_early_answer_is_the_checked_configs_answer(
    tmp_path: Path, case: str, capabilities: dict[str, Any]
) -> None:
    path = _agents(tmp_path, AGENT_FILES[case])
    written, report = _probe(
        ["acp", "--agents", path], _initialize(7, capabilities), _env(tmp_path)
    )
    assert report["answered"], report
    assert written == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": initialize_answer(load_agents(path), capabilities),
    }


@pytest.mark.parametrize(
    ("keys", "logged_in"),
    [
        ({}, None),
        ({"OPENAI_API_KEY": "sk-o"}, None),
        ({"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "sk-o"}, None),
        ({"GOOGLE_API_KEY": "g"}, None),
        ({"ANTHROPIC_API_KEY": ""}, "GEMINI_API_KEY"),  # empty counts as unset
        ({"OPENAI_API_KEY": "sk-o"}, "ANTHROPIC_API_KEY"),
    ],
)
def test_the_default_agent_is_the_one_the_door_picks(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    keys: dict[str, str],
    logged_in: str | None,
) -> None:
    env = _env(tmp_path, **keys)
    if logged_in is not None:  # as oma-host login keeps a key in the file store
        folder = tmp_path / "config" / "oma-host"
        folder.mkdir(parents=True)
        (folder / "logins.json").write_text(json.dumps({logged_in: "file"}))
        (folder / "credentials.json").write_text(json.dumps({logged_in: "kept"}))
    written, report = _probe(["acp"], _initialize(1, TERMINAL), env)
    assert report["answered"], report
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in {**keys, "XDG_CONFIG_HOME": env["XDG_CONFIG_HOME"]}.items():
        monkeypatch.setenv(name, value)
    assert written is not None
    assert written["result"] == initialize_answer(load_agents(None), TERMINAL)


def test_a_key_kept_in_the_keyring_leaves_the_default_agent_to_the_door(
    tmp_path: Path,
) -> None:
    """Whether the keyring gives the key back is known only by asking it."""
    folder = tmp_path / "config" / "oma-host"
    folder.mkdir(parents=True)
    (folder / "logins.json").write_text(json.dumps({"ANTHROPIC_API_KEY": "keyring"}))
    written, report = _probe(["acp"], _initialize(), _env(tmp_path))
    assert written is None and report["pending"] is None


def test_the_users_agents_file_is_read_when_no_file_is_given(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "oma-host"
    folder.mkdir(parents=True)
    (folder / "agents.json").write_text(json.dumps(AGENT_FILES["own keys"]))
    written, report = _probe(["acp"], _initialize(), _env(tmp_path))
    assert report["answered"]
    assert written is not None
    ids = [method["id"] for method in written["result"]["authMethods"]]
    assert ids == ["env:MY_GEMINI", "env:SNAKE_KEY"]


def test_the_early_answer_imports_nothing_heavy(tmp_path: Path) -> None:
    """No json, re, typing, dataclasses, pydantic, asyncio or argparse: the
    modules it adds to a bare interpreter are these, and no others."""
    path = _agents(tmp_path, AGENT_FILES["each provider"])
    _, report = _probe(["acp", "--agents", path], _initialize(), _env(tmp_path))
    assert report["answered"]
    assert set(report["imported"]) <= {
        "_json",
        "oma_host",
        "oma_host.acp_server",
        "oma_host.acp_server.early",
        "oma_host.acp_server.handshake",
        "oma_host.cli",
        "oma_host.core.cli_options",
        "oma_host.core",
        "oma_host.core.credentials",
        "oma_host.core.places",
        "oma_host.core.quickjson",
        "oma_host.core.version",
        "oma_host.wire",
        "oma_host.wire.limits",
    }, report["imported"]


@pytest.mark.parametrize(
    "args",
    [
        ["acp", "login"],
        ["acp", "--help"],
        ["acp", "--agent", "F"],  # an abbreviation argparse would take
        ["acp", "--log-level", "LOUD"],
        ["acp", "--max-message-bytes", "0"],
        ["acp", "--session-idle-timeout=never"],
        ["acp", "--agents"],
        ["acp", "--agents", "--state-dir"],
        ["--state-dir", "x", "acp"],
        ["demo"],
        [],
    ],
)
def test_a_command_line_it_does_not_read_exactly_is_left_alone(
    tmp_path: Path, args: list[str]
) -> None:
    written, report = _probe(args, _initialize(), _env(tmp_path))
    assert written is None and not report["answered"]
    assert report["pending"] is None  # stdin not read: all of it left to the command line


def test_it_reads_the_acp_options_the_parser_declares() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    acp = commands.choices["acp"]  # type: ignore[index]
    declared = {s for action in acp._actions for s in action.option_strings}
    assert declared - {"-h", "--help", "--version"} == set(ACP_OPTIONS) | ACP_FLAGS


def test_a_flag_is_read_and_a_flag_given_a_value_is_left_to_the_parser(tmp_path: Path) -> None:
    path = _agents(tmp_path, AGENT_FILES["each provider"])
    flagged = ["acp", "--no-telemetry", "--agents", path]
    written, report = _probe(flagged, _initialize(3), _env(tmp_path))
    assert report["answered"], report
    assert written == {
        "jsonrpc": "2.0",
        "id": 3,
        "result": initialize_answer(load_agents(path), {}),
    }
    written, report = _probe(["acp", "--no-telemetry=yes"], _initialize(), _env(tmp_path))
    assert written is None and report["pending"] is None


@pytest.mark.parametrize(
    "agents",
    [
        [{"name": "t", "provider": "test", "model": "echo"}],  # not offered
        [{"name": "x", "provider": "nosuch", "model": "m"}],
        [{"name": "x", "provider": 3, "model": "m"}],
        [{"name": "x", "provider": "openai", "apiKey": "a", "api_key": "b", "model": "m"}],
        [],
        {"name": "not an array"},
    ],
)
def test_agents_it_does_not_read_exactly_are_left_to_the_checks(
    tmp_path: Path, agents: Any
) -> None:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(agents))
    written, report = _probe(["acp", "--agents", str(path)], _initialize(), _env(tmp_path))
    assert written is None and report["pending"] is None


@pytest.mark.parametrize(
    "first",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientCapabilities":{"_meta":{"x":1}}}}\n',
        b'{"jsonrpc":"2.0","id":true,"method":"initialize","params":{"protocolVersion":1}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,'
        b'"clientInfo":{"name":"\\ud800","version":"1"}}}\n',
        b"not json\n",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize"',  # no newline before the end
    ],
)
def test_a_first_line_that_is_not_a_plain_initialize_is_handed_on(
    tmp_path: Path, first: bytes
) -> None:
    path = _agents(tmp_path, AGENT_FILES["no provider named"])
    later = b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'
    stdin = first + later if first.endswith(b"\n") else first
    written, report = _probe(["acp", "--agents", path], stdin, _env(tmp_path))
    assert written is None and not report["answered"]
    assert report["pending"] == stdin.decode()  # every byte read, for the door


def test_the_provider_table_is_the_descriptors() -> None:
    table = provider_auth_table.TABLE_PATH
    assert table.read_text(encoding="utf-8") == provider_auth_table.build(), (
        "run python3 -m oma_host.cli.provider_auth_table"
    )


def _acp(args: list[str], stdin: bytes, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "oma_host", "acp", *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )


def _answers(args: list[str], stdin: bytes, tmp_path: Path) -> tuple[list[Any], str]:
    """The door's answers to the requests in ``stdin`` (read before stdin is
    closed: the end of stdin cancels what is still running), and its stderr;
    it exits 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "oma_host", "acp", *args, "--state-dir", ":memory:"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(stdin)
    process.stdin.flush()
    answers = [json.loads(process.stdout.readline()) for _ in range(stdin.count(b"\n"))]
    _, stderr = process.communicate(timeout=TIMEOUT_S)
    assert process.returncode == 0
    return sorted(answers, key=lambda answer: int(answer["id"])), stderr.decode()


def test_an_invalid_config_is_reported_to_the_editor_after_the_early_answer(
    tmp_path: Path,
) -> None:
    """The door does not end: ``initialize`` is answered, and every session
    request is refused with the file, the JSON path and the problem."""
    path = _agents(tmp_path, [{"name": "a", "provider": "openai", "model": "m", "maxTurns": "9"}])
    later = b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'
    (answered, listed), stderr = _answers(["--agents", path], _initialize() + later, tmp_path)
    assert answered["id"] == 1 and "result" in answered
    assert listed["id"] == 2 and listed["error"]["code"] == -32602
    assert f"{path}: $[0].maxTurns: Input should be a valid integer" in listed["error"]["message"]
    (line,) = stderr.splitlines()
    assert f"no session can start: {path}: $[0].maxTurns" in line


def test_a_file_that_does_not_parse_is_reported_to_the_editor(tmp_path: Path) -> None:
    path = tmp_path / "agents.json"
    path.write_text("[{")
    later = (
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n'
    )
    (answered, refused), _ = _answers(["--agents", str(path)], _initialize() + later, tmp_path)
    assert answered["result"]["authMethods"] == []  # no agents: nothing to log in to
    assert refused["error"]["code"] == -32602
    assert f"{path}: not valid JSON" in refused["error"]["message"]


def test_requests_sent_with_the_initialize_are_served_after_it(tmp_path: Path) -> None:
    """One write holding ``initialize`` and two more requests: the early
    answer reads past its line, and the door serves what it read."""
    path = _agents(tmp_path, AGENT_FILES["no provider named"])
    later = (
        b'{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}\n'
        b'{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1}}\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "oma_host", "acp", "--agents", path, "--state-dir", ":memory:"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(_initialize() + later)
    process.stdin.flush()
    first = json.loads(process.stdout.readline())
    # The two after it are served concurrently: in either order.
    answers = [first, *sorted((json.loads(process.stdout.readline()) for _ in range(2)), key=str)]
    process.stdin.close()
    assert process.wait(TIMEOUT_S) == 0
    answers[1:] = sorted(answers[1:], key=lambda answer: int(answer["id"]))
    assert [answer["id"] for answer in answers] == [1, 2, 3]
    assert answers[1]["result"] == {"sessions": []}
    assert answers[2]["result"] == answers[0]["result"]


def test_the_door_serves_the_agents_file_the_early_answer_read(tmp_path: Path) -> None:
    """A file replaced between the early answer and the door's checks: the
    door serves the bytes the answer was made from, never other agents than
    it advertised."""
    from oma_host.acp_server.early import EarlyStart
    from oma_host.acp_server.serve import AcpOptions, served_agents

    path = _agents(tmp_path, [{"name": "answered", "provider": "openai", "model": "m"}])
    answered = Path(path).read_bytes()
    _agents(tmp_path, [{"name": "replaced", "provider": "gemini", "model": "m"}])
    options = AcpOptions(path, ":memory:", 60.0)
    early = EarlyStart(b"", {}, {"authMethods": []}, (path, answered))
    assert [config.name for config in served_agents(options, early).configs] == ["answered"]
    # Without an early answer the door reads the file as it is now.
    assert [c.name for c in served_agents(options, EarlyStart(b"")).configs] == ["replaced"]
