"""Every secret variable any provider's descriptor declares is redacted from
everything a host writes: with them all in the host's environment, a model
reply that echoes them (the provider simulator's) leaves none in the run's
result, its streamed events, the DEBUG log or the SQLite store. The variables
come from the descriptors (``core/provider_facts.py``), so a provider added
there is covered here."""

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient, host_argv
from oma_host.core.provider_facts import PROVIDERS
from oma_host.orchestration.store_schema import DB_NAME
from oma_host.testing.simulator import Reply, Simulator

# (provider, variable) for every secret of every descriptor.
SECRET_VARIABLES = [(f.name, name) for f in PROVIDERS for name in f.secret_variables]


def _fake_values() -> dict[str, str]:
    """A distinctive value per variable, shaped like no credential pattern, so
    only the agent's own secrets can take it out."""
    return {
        name: f"oma{index}fake{secrets.token_hex(12)}"
        for index, (_, name) in enumerate(SECRET_VARIABLES)
    }


def test_the_descriptors_declare_the_secrets_the_providers_read() -> None:
    assert len(SECRET_VARIABLES) >= 9  # five keyed providers, Bedrock's signing secrets
    assert ("bedrock", "AWS_SECRET_ACCESS_KEY") in SECRET_VARIABLES
    assert ("bedrock", "AWS_ACCESS_KEY_ID") not in SECRET_VARIABLES  # it names a key, no more


async def test_no_providers_secret_variable_reaches_what_the_host_writes(
    sim: Simulator, tmp_path: Path
) -> None:
    values = _fake_values()
    sim.script(Reply.text("keys: " + " ".join(values.values()), chunk_size=7))
    # Its key is the fake ANTHROPIC_API_KEY.
    client, result, written = await _one_stored_turn(sim, tmp_path, "anthropic", values)
    assert "keys: [redacted]" in written["the store"]  # the session's history is there
    assert client.progress("t")  # and the reply streamed
    leaked = [
        f"{provider}'s {name} in {where}"
        for provider, name in SECRET_VARIABLES
        for where, text in written.items()
        if values[name] in text
    ]
    assert not leaked
    assert result["output"].count("[redacted]") == len(values)  # the reply echoed every one


async def test_a_bedrock_profiles_secrets_read_from_its_files_are_redacted(
    sim: Simulator, tmp_path: Path
) -> None:
    """Keys from the AWS shared files, not the environment: the secret key
    and session token of the active profile are secrets like the variables'
    (the access key id names a key and stays)."""
    secret_key = "profile-secret-" + secrets.token_hex(12)
    session_token = "profile-token-" + secrets.token_hex(12)
    credentials = tmp_path / "credentials"
    credentials.write_text(
        "[work]\naws_access_key_id = AKIAPROFILEKEYID\n"
        f"aws_secret_access_key = {secret_key}\naws_session_token = {session_token}\n"
    )
    sim.script(Reply.text(f"keys: {secret_key} {session_token}", chunk_size=7))
    env = {
        **{name: "" for _, name in SECRET_VARIABLES},
        "AWS_ACCESS_KEY_ID": "",
        "AWS_REGION": "us-east-1",
        "AWS_PROFILE": "work",
        "AWS_SHARED_CREDENTIALS_FILE": str(credentials),
        "AWS_CONFIG_FILE": str(tmp_path / "no-config"),
    }
    _, result, written = await _one_stored_turn(sim, tmp_path, "bedrock", env)
    assert "Credential=AKIAPROFILEKEYID/" in sim.requests[-1].headers["authorization"]
    assert result["output"] == "keys: [redacted] [redacted]"
    assert "keys: [redacted] [redacted]" in written["the store"]
    leaked = [
        f"the profile's {what} in {where}"
        for what, value in (("secret key", secret_key), ("session token", session_token))
        for where, text in written.items()
        if value in text
    ]
    assert not leaked


async def _one_stored_turn(
    sim: Simulator, tmp_path: Path, provider: str, env: dict[str, str]
) -> tuple[HostClient, dict[str, Any], dict[str, str]]:
    """One streamed prompt of a ``provider`` agent in a stored session (so
    the turn is written to the SQLite store) of a host logging at DEBUG with
    ``env``: the client, the result and everything the host wrote."""
    state = tmp_path / "state"
    client = await HostClient.spawn(
        host_argv("--log-level", "DEBUG", "--state-dir", str(state)), env=env
    )
    await client.initialize()
    config = {"name": "keyed", "provider": provider, "model": "m", "baseURL": sim.base_url}
    created = await client.request("agent/create", {"config": config, "sessionId": "keys"})
    result = await client.request(
        "agent/prompt", {"agentId": created["agentId"], "input": "go", "partialResultToken": "t"}
    )
    assert await client.close() == 0
    assert result["success"], result
    return client, result, await _everything_written(client, result, state)


async def _everything_written(
    client: HostClient, result: dict[str, Any], state: Path
) -> dict[str, str]:
    """What a host wrote, by where: the result, its notifications, its log
    (stderr) and its SQLite store."""
    database = sqlite3.connect(state / DB_NAME)
    stored = "\n".join(database.iterdump())
    database.close()
    return {
        "the result": json.dumps(result),
        "the streamed events": json.dumps(client.notifications),
        "the DEBUG log": await client.stderr_text(),
        "the store": stored,
    }
