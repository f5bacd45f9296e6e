"""A new user's first hour from an editor's agent list: the ``initialize``
bodies the ACP Registry's validator, JetBrains and Zed send are each offered
a terminal login; the login those clients run, in a real pseudo-terminal,
stores a key that then serves a session with no key in the environment; and
a missing or refused key is ``auth_required`` (-32000), which opens the
editor's login, never an internal error.

The bodies are the clients' own shapes: the registry's validator
(``.github/workflows/client.py`` of the ACP Registry) sends ``terminal``,
``fs`` and the legacy ``_meta`` opt-ins; JetBrains 2026.1 sends ``terminal:
false``, a gateway ``auth._meta`` and the legacy ``_meta["terminal-auth"]``;
Zed 1.13 sends ``auth.terminal`` and the ``_meta`` form too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pexpect
import pytest

from oma_host.testing.simulator import Fault, Reply
from tests.acp_server.helpers import (
    TIMEOUT_S,
    Door,
    initialize,
    new_session,
    prompt,
    refused_agents_file,
    step,
    text,
)

KEY = "sk-ant-kept-by-the-editors-login-42"
FS = {"readTextFile": True, "writeTextFile": True}
REGISTRY_VALIDATOR = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": FS,
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
JETBRAINS = {
    "protocolVersion": 1,
    "clientInfo": {"name": "IntelliJ IDEA", "version": "2026.1"},
    "clientCapabilities": {
        "fs": FS,
        "terminal": False,
        "auth": {"_meta": {"gateway": True}},
        "_meta": {"terminal-auth": True},
    },
}
ZED = {
    "protocolVersion": 1,
    "clientInfo": {"name": "zed", "title": "Zed", "version": "1.13.0"},
    "clientCapabilities": {
        "fs": FS,
        "terminal": True,
        "auth": {"terminal": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
LEGACY_CLIENTS = {"registry validator": REGISTRY_VALIDATOR, "JetBrains": JETBRAINS}


class Editor:
    """``oma-host acp`` driven with JSON lines written by hand, as these
    clients write them."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
        )
        self._ids = 0

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The answer to one request (notifications on the way are skipped)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self._ids += 1
        request = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            assert line, "oma-host acp closed its output"
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == self._ids and "method" not in message:
                return message

    def close(self) -> str:
        """End the door (its input closed); what it wrote on stderr."""
        _, stderr = self.process.communicate(timeout=TIMEOUT_S)
        assert self.process.returncode == 0, stderr
        return stderr


def _no_key_env(door: Door) -> dict[str, str]:
    """A fresh user: no provider key in the environment, an empty config
    folder, and no OS keyring to find one in."""
    env = {name: value for name, value in door.env.items() if not name.endswith("_API_KEY")}
    home = door.tmp / "home"
    home.mkdir(exist_ok=True)
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(door.tmp / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.fail.Keyring"
    return env


def _no_agents_file(door: Door) -> list[str]:
    """``oma-host acp`` with no agents file: the default agent."""
    return [sys.executable, "-m", "oma_host", "acp", "--state-dir", str(door.state)]


def _log_in(command: str, args: list[str], env: dict[str, str], provider: str) -> None:
    """Run a login command as the editor would, in a terminal of its own, and
    answer it as a user would."""
    child = pexpect.spawn(command, args, env=env, encoding="utf-8", timeout=TIMEOUT_S)
    child.expect_exact("Provider [1-")
    child.sendline(provider)
    child.expect_exact("key (")
    child.sendline(KEY)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before


@pytest.mark.parametrize(
    "client", [REGISTRY_VALIDATOR, JETBRAINS, ZED], ids=["registry", "jb", "zed"]
)
def test_each_editor_is_offered_a_terminal_login(door: Door, client: dict[str, Any]) -> None:
    editor = Editor(_no_agents_file(door), _no_key_env(door))
    answer = editor.call("initialize", client)["result"]
    editor.close()
    methods = answer["authMethods"]
    # The registry's check: a method whose type (else _meta's key) is terminal or agent.
    assert any(
        method.get("type", "terminal" if "terminal-auth" in method.get("_meta", {}) else "agent")
        in ("terminal", "agent")
        for method in methods
    )
    login = methods[0]
    assert (login["id"], login["type"], login["args"]) == ("oma-host-login", "terminal", ["login"])
    current = client["clientCapabilities"].get("auth", {}).get("terminal") is True
    if current:  # Zed runs its own launch command with the args: no legacy command
        assert "_meta" not in login
    else:
        legacy = login["_meta"]["terminal-auth"]
        assert legacy["command"] == sys.executable  # absolute, as the legacy clients run it
        assert legacy["args"] == ["-m", "oma_host", "acp", "login"]
        assert legacy["label"] == "oma-host login"
    # The env_var methods stay for the clients that use them.
    assert [m["id"] for m in methods[1:]] == ["env:ANTHROPIC_API_KEY"]


def test_a_client_that_runs_no_terminal_logins_is_offered_none(door: Door) -> None:
    editor = Editor(_no_agents_file(door), _no_key_env(door))
    plain = editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": FS}})
    editor.close()
    assert [m["type"] for m in plain["result"]["authMethods"]] == ["env_var"]


@pytest.mark.parametrize("client", LEGACY_CLIENTS.values(), ids=LEGACY_CLIENTS.keys())
def test_the_legacy_login_command_logs_in_and_serves_a_session(
    door: Door, client: dict[str, Any]
) -> None:
    """No key anywhere: ``session/new`` is ``auth_required``; the method's
    ``_meta["terminal-auth"]`` command, run in a terminal, stores a key; the
    same door then opens the session, and a door over an agents file whose
    agent talks to the simulator sends that key with the turn."""
    env = _no_key_env(door)
    editor = Editor(_no_agents_file(door), env)
    login = editor.call("initialize", client)["result"]["authMethods"][0]
    refused = editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
    assert refused["error"]["code"] == -32000
    assert "anthropic: no API key" in refused["error"]["message"]
    assert "oma-host login" in refused["error"]["message"]

    legacy = login["_meta"]["terminal-auth"]
    _log_in(legacy["command"], legacy["args"], env, "anthropic")
    opened = editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
    assert opened["result"]["sessionId"].startswith("sess_")
    editor.close()

    door.env = env
    door.sim.script(Reply.text("logged in"))
    _, new, turn = door.run(initialize(), new_session(door.cwd), prompt(text("hi")))
    assert new["result"]["sessionId"].startswith("sess_")
    assert turn["result"]["stopReason"] == "end_turn"
    assert door.sim.requests[-1].headers["x-api-key"] == KEY


def test_zeds_login_runs_the_door_with_the_methods_args(door: Door) -> None:
    """A client with ``auth.terminal`` runs the agent's own command with the
    method's ``args``: ``oma-host acp ... login``."""
    env = _no_key_env(door)
    argv = _no_agents_file(door)
    editor = Editor(argv, env)
    login = editor.call("initialize", ZED)["result"]["authMethods"][0]
    _log_in(argv[0], [*argv[1:], *login["args"]], env, "1")
    opened = editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
    editor.close()
    assert opened["result"]["sessionId"].startswith("sess_")


def test_a_login_to_another_provider_gives_the_default_agent_that_provider(door: Door) -> None:
    """With no agents file the default agent is whichever provider has a key:
    a key kept by a login after the door started counts."""
    env = _no_key_env(door)
    editor = Editor(_no_agents_file(door), env)
    editor.call("initialize", ZED)
    assert editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})["error"]
    _log_in(sys.executable, ["-m", "oma_host", "login"], env, "openai")
    opened = editor.call("session/new", {"cwd": str(door.cwd), "mcpServers": []})
    editor.close()
    agent = next(o for o in opened["result"]["configOptions"] if o["id"] == "agent")
    assert agent["currentValue"] == "openai"


def test_no_key_is_auth_required_on_new_load_resume_and_prompt(door: Door) -> None:
    """-32000 names the provider and how to log in, from every request that
    needs the agent's key; an external agent in the same file needs none."""
    door.env = _no_key_env(door)
    door.write_agents(
        {"name": "cat", "backend": {"kind": "process", "command": "cat"}},
        first=door.llm(),
    )
    _, refused, listed = door.run(
        initialize(), new_session(door.cwd), step("session/list", cwd=str(door.cwd))
    )
    assert refused["error"]["code"] == -32000
    assert refused["error"]["message"].startswith("anthropic: no API key")
    assert listed["result"] == {"sessions": []}
    # A session stored while the key was there, loaded and resumed without it.
    door.env = {**door.env, "ANTHROPIC_API_KEY": "sk-ant-for-now"}
    door.sim.script(Reply.text("stored"))
    _, stored, _ = door.run(initialize(), new_session(door.cwd), prompt(text("hi")))
    session_id = stored["result"]["sessionId"]
    door.env = _no_key_env(door)
    where = {"sessionId": session_id, "cwd": str(door.cwd), "mcpServers": []}
    _, loaded, resumed = door.run(
        initialize(), step("session/load", **where), step("session/resume", **where)
    )
    assert loaded["error"]["code"] == -32000 and resumed["error"]["code"] == -32000


def test_a_key_the_provider_refuses_is_auth_required(door: Door) -> None:
    door.sim.script(Fault(401, "invalid x-api-key"))
    _, _, turn = door.run(initialize(), new_session(door.cwd), prompt(text("hi")))
    assert turn["error"]["code"] == -32000
    assert "401" in turn["error"]["message"] or "invalid x-api-key" in turn["error"]["message"]
    assert "oma-host login" in turn["error"]["message"]
    assert "sk-ant-test-key" not in json.dumps(turn)


def test_an_external_agent_needs_no_key(door: Door, tmp_path: Path) -> None:
    door.env = _no_key_env(door)
    door.write_agents(first={"name": "cat", "backend": {"kind": "process", "command": "cat"}})
    _, new, turn = door.run(initialize(), new_session(door.cwd), prompt(text("echo me")))
    assert new["result"]["sessionId"].startswith("sess_")
    assert turn["result"]["stopReason"] == "end_turn"


def test_a_compatible_server_named_by_the_sdks_variable_needs_no_key(door: Door) -> None:
    """``OPENAI_BASE_URL`` naming a server of one's own (a local model, a
    proxy) is not pre-checked for a key: the session opens and the turn
    reaches the server, which would say itself if it wanted one."""
    door.env = {**_no_key_env(door), "OPENAI_BASE_URL": door.sim.base_url + "/v1"}
    door.write_agents(first={"name": "local", "provider": "openai", "model": "llama-local"})
    door.sim.script(Reply.text("local reply"))
    _, new, turn = door.run(initialize(), new_session(door.cwd), prompt(text("hi")))
    assert new["result"]["sessionId"].startswith("sess_")
    assert turn["result"]["stopReason"] == "end_turn"
    assert door.sim.requests[-1].path == "/v1/chat/completions"
    assert "authorization" not in door.sim.requests[-1].headers


def test_a_typo_in_the_agents_file_is_named_in_the_editors_error(door: Door) -> None:
    """The door answers ``initialize`` and names the file, the entry and the
    tool in ``session/new``'s error, rather than ending."""
    door.agents_file.write_text(
        json.dumps([{"name": "a", "provider": "anthropic", "model": "m", "tools": ["file_reed"]}])
    )
    error, stderr = refused_agents_file(door.agents_file)
    assert error["code"] == -32602
    assert f"{door.agents_file}: $[0].tools[0]: unknown tool 'file_reed'" in error["message"]
    assert "did you mean file_read?" in error["message"]
    assert "file_reed" in stderr
