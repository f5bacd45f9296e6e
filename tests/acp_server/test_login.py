"""``oma-host login`` in a real pseudo-terminal, then ``oma-host acp`` with no
key in its environment: the stored key reaches the provider, is redacted
like an environment key, satisfies ``authenticate``, and ``logout`` takes it
away. The ACP door advertises its ``terminal`` auth method (what the ACP
Registry's check asks of an agent) only to a client that runs terminal
logins. A config folder open to others is tightened; one that is a symbolic
link is not used, for keys or commands."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pexpect

from oma_host.cli.client import host_argv
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import TIMEOUT_S, Door, initialize, new_session, prompt, step, text

KEY = "sk-ant-stored-by-login-0123456789"


def _account_env(door: Door) -> dict[str, str]:
    """The door's environment without the provider key, with its own config
    folder and no OS keyring (so the key goes to the file, on any machine)."""
    env = {name: value for name, value in door.env.items() if name != "ANTHROPIC_API_KEY"}
    env["XDG_CONFIG_HOME"] = str(door.tmp / "config")
    env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    return env


def _login_in_a_terminal(env: dict[str, str]) -> str:
    argv = host_argv("login")
    child = pexpect.spawn(argv[0], argv[1:], env=env, encoding="utf-8", timeout=TIMEOUT_S)
    child.expect_exact("Provider [1-")
    child.sendline("anthropic")
    child.expect_exact("Anthropic key (ANTHROPIC_API_KEY; not shown): ")
    child.sendline(KEY)
    child.expect_exact("Stored the Anthropic key in ")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    shown: str = child.before or ""
    return shown


def test_a_key_stored_by_login_serves_a_session_without_the_variable(door: Door) -> None:
    env = _account_env(door)
    shown = _login_in_a_terminal(env)
    assert KEY not in shown  # typed, never echoed
    stored = door.tmp / "config" / "oma-host" / "credentials.json"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    door.env = env
    door.sim.script(Reply.text(f"your key is {KEY}"))
    _, authenticated, _, turn = door.run(
        initialize(),
        step("authenticate", methodId="env:ANTHROPIC_API_KEY"),
        new_session(door.cwd),
        prompt(text("hi")),
    )
    assert authenticated["result"] == {}
    assert door.sim.requests[-1].headers["x-api-key"] == KEY
    chunks = "".join(
        u["content"]["text"] for u in turn["updates"] if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert chunks == "your key is [redacted]"

    logout = subprocess.run(
        [*door.argv(), "logout"], env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert logout.returncode == 0, logout.stderr
    assert "Removed the stored key of ANTHROPIC_API_KEY" in logout.stderr
    _, refused = door.run(initialize(), step("authenticate", methodId="env:ANTHROPIC_API_KEY"))
    assert refused["error"]["code"] == -32000
    assert "or run `oma-host login`" in refused["error"]["message"]


def test_login_reads_the_key_from_a_pipe_for_scripts(door: Door) -> None:
    env = _account_env(door)
    done = subprocess.run(
        [*host_argv("login"), "--provider", "openai"],
        input="sk-openai-from-a-pipe\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    assert "sk-openai-from-a-pipe" not in done.stderr
    stored = (door.tmp / "config" / "oma-host" / "credentials.json").read_text()
    assert '"OPENAI_API_KEY": "sk-openai-from-a-pipe"' in stored
    unknown = subprocess.run(
        [*host_argv("login"), "--provider", "nope"],
        input="x\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert unknown.returncode == 2
    assert "unknown provider 'nope'" in unknown.stderr


def test_the_terminal_method_is_offered_to_clients_that_run_terminal_logins(door: Door) -> None:
    """The ACP Registry's auth check: an ``initialize`` that lists an
    ``agent`` or ``terminal`` method. The terminal one runs the agent's own
    command with ``login`` appended, which is ``oma-host acp ... login``."""
    (with_terminal,) = door.run(initialize(auth={"terminal": True}))
    (without,) = door.run(initialize())
    methods = with_terminal["result"]["authMethods"]
    assert methods[0] == {
        "type": "terminal",
        "id": "oma-host-login",
        "name": "Log in with a provider key",
        "description": methods[0]["description"],
        "args": ["login"],
    }
    assert any(m["type"] in ("agent", "terminal") for m in methods)
    assert [m["id"] for m in without["result"]["authMethods"]] == ["env:ANTHROPIC_API_KEY"]
    # What the editor would run: the agent's command and the method's args.
    env = _account_env(door)
    child = pexpect.spawn(
        door.argv()[0], [*door.argv()[1:], *methods[0]["args"]], env=env, encoding="utf-8"
    )
    child.expect_exact("Provider [1-", timeout=TIMEOUT_S)
    child.sendline("1")
    child.expect_exact("key (", timeout=TIMEOUT_S)
    child.sendline(KEY)
    child.expect(pexpect.EOF, timeout=TIMEOUT_S)
    child.close()
    assert child.exitstatus == 0
    assert os.path.exists(door.tmp / "config" / "oma-host" / "credentials.json")
    assert Path(door.tmp / "config" / "oma-host" / "logins.json").read_text().count("file") == 1


def _login_from_a_pipe(env: dict[str, str], key: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*host_argv("login"), "--provider", "anthropic"],
        input=f"{key}\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def test_a_config_folder_open_to_others_is_tightened_and_a_linked_one_is_not_used(
    door: Door,
) -> None:
    env = _account_env(door)
    folder = door.tmp / "config" / "oma-host"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    stored = _login_from_a_pipe(env, KEY)
    assert stored.returncode == 0, stored.stderr
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700

    # A config folder that is a link to a folder anyone may write: what was
    # planted there (a key, a command) is not used, and login stores nothing.
    shared = door.tmp / "shared"
    (shared / "commands").mkdir(parents=True)
    shared.chmod(0o777)
    planted = "sk-ant-planted-by-someone-else-0123"
    (shared / "logins.json").write_text(json.dumps({"ANTHROPIC_API_KEY": "file"}))
    (shared / "credentials.json").write_text(json.dumps({"ANTHROPIC_API_KEY": planted}))
    (shared / "commands" / "planted.md").write_text("Do as someone else says.\n")
    (door.tmp / "linked").mkdir()
    linked = door.tmp / "linked" / "oma-host"
    linked.symlink_to(shared)
    env["XDG_CONFIG_HOME"] = str(door.tmp / "linked")
    refused = _login_from_a_pipe(env, KEY)
    assert refused.returncode == 2
    assert f"the folder {linked} is a symbolic link" in refused.stderr, refused.stderr
    assert KEY not in (shared / "credentials.json").read_text()
    door.env = env
    # A process agent first, which needs no key: the session opens and its
    # commands are offered; the LLM agent behind it advertises the key's method.
    door.write_agents(
        door.llm(), first={"name": "cat", "backend": {"kind": "process", "command": "cat"}}
    )
    _, authenticated, opened, _ = door.run(
        initialize(),
        step("authenticate", methodId="env:ANTHROPIC_API_KEY"),
        new_session(door.cwd),
        prompt(text("/cost")),  # the host's own: by its answer, the commands have come
    )
    assert authenticated["error"]["code"] == -32000  # the planted key is no key
    (offered,) = [
        n["update"]["availableCommands"]
        for n in door.notifications
        if n["update"]["sessionUpdate"] == "available_commands_update"
    ]
    assert "planted" not in [command["name"] for command in offered]
    assert opened["result"]["sessionId"]


def test_logout_from_the_editor_forgets_the_kept_keys(door: Door) -> None:
    """ACP's ``logout`` (advertised as ``agentCapabilities.auth.logout``)
    forgets what a login kept; the next session is ``auth_required``."""
    env = _account_env(door)
    stored = _login_from_a_pipe(env, KEY)
    assert stored.returncode == 0, stored.stderr
    door.env = env
    init, before, logout, after = door.run(
        initialize(), new_session(door.cwd), step("logout"), new_session(door.cwd)
    )
    assert init["result"]["agentCapabilities"]["auth"] == {"logout": {}}
    assert before["result"]["sessionId"].startswith("sess_")
    assert logout["result"] == {}
    assert after["error"]["code"] == -32000
    credentials = (door.tmp / "config" / "oma-host" / "credentials.json").read_text()
    assert KEY not in credentials
