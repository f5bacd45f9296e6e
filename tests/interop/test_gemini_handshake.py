"""A real published ACP agent: Gemini CLI (``@google/gemini-cli``, ``--acp``)
through the real host, with no credentials. It answers ``initialize`` and
then refuses ``session/new`` because it has no API key; the host must report
that refusal, in the agent's own words, as a failed result."""

from __future__ import annotations

from pathlib import Path

from oma_host.cli.client import HostClient
from oma_host.testing.script import Reply
from oma_host.testing.simulator import Simulator
from tests.server.helpers import create, wait_dead


async def test_gemini_cli_gets_through_initialize_and_reports_its_own_error(
    host: HostClient, gemini_script: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # No credentials of any kind: an empty home and empty key variables.
    env = {"HOME": str(home), "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""}
    config = {
        "name": "gemini",
        "timeoutMs": 90_000,
        "backend": {
            "kind": "acp",
            "command": "node",
            "args": [gemini_script, "--acp"],
            "env": env,
            "cwd": str(tmp_path),
        },
    }
    agent = await create(host, **config)
    result = await host.request("agent/run", {"agentId": agent, "input": "hello"}, timeout=120)
    assert result["success"] is False and result["status"]["code"] == "error", result
    assert result["errorInfo"]["kind"] == "auth", result
    message = result["status"]["message"]
    # Past initialize (its name and login methods come from the initialize
    # answer) and refused at session/new with the agent's own words.
    assert "(gemini-cli " in message, message
    assert "refused session/new" in message, message
    assert "Gemini API key is missing" in message, message
    assert "Log in with Google" in message, message
    # The refused process is not left behind (the host's warden lives as
    # long as the host, by design).
    assert all(wait_dead(pid) for pid in children_of(host.process.pid))


def children_of(parent: int) -> list[int]:
    """The live processes whose parent is ``parent``, but for its warden."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError):
            continue
        if any(arg.endswith(b"/process/warden.py") for arg in argv):
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            children.append(int(entry.name))
    return children


async def test_gemini_cli_logs_in_with_its_api_key_method(
    host: HostClient, gemini_script: str, tmp_path: Path
) -> None:
    """With a (dummy) key variable set and ``backend.auth`` naming the API-key
    method, the host runs ``authenticate`` with it before session/new, and the
    run shows Gemini CLI's own answer. Offline: its API calls go to the
    host's Gemini-wire simulator on 127.0.0.1 (``GOOGLE_GEMINI_BASE_URL``)."""
    home = tmp_path / "home"
    home.mkdir()
    with Simulator() as sim:
        sim.script(Reply.text("pong from the model"))
        env = {
            "HOME": str(home),
            "GEMINI_API_KEY": "dummy-key-for-interop",
            "GOOGLE_API_KEY": "",
            "GOOGLE_GEMINI_BASE_URL": sim.base_url,
            "GEMINI_MODEL": "gemini-2.5-flash",  # a fixed model: no routing requests first
        }
        config = {
            "name": "gemini",
            "timeoutMs": 90_000,
            "backend": {
                "kind": "acp",
                "command": "node",
                "args": [gemini_script, "--acp"],
                "env": env,
                "cwd": str(tmp_path),
                "auth": "gemini-api-key",
            },
        }
        agent = await create(host, **config)
        result = await host.request(
            "agent/stream",
            {"agentId": agent, "input": "ping", "partialResultToken": "g"},
            timeout=120,
        )
        events = host.progress("g")
    # authenticate came first, with the API-key method named in backend.auth.
    assert events[0] == {"type": "authenticated", "data": {"methodId": "gemini-api-key"}}, events
    assert result["success"] is True, result
    # Gemini CLI's own answer: the model text it streamed back.
    assert result["output"] == "pong from the model", result
    turn = [r for r in sim.requests if ":streamGenerateContent" in r.path]
    assert turn[-1].body["contents"][-1]["parts"][-1]["text"] == "ping"
    assert len(turn) == 1 and turn[0].headers["x-goog-api-key"] == "dummy-key-for-interop"
