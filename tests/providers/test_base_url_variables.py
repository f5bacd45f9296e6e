"""The endpoint a provider reads from its SDK's variable when a config has no
``baseURL`` (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``,
``GOOGLE_GEMINI_BASE_URL``, ``AZURE_OPENAI_ENDPOINT``,
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, ``AWS_ENDPOINT_URL``), over stdio
against the simulator: each variable brings the request to the simulator, a
config's ``baseURL`` wins over it as in the SDKs, a malformed value fails the
run naming the variable (and the host keeps serving), and the secrets of such
a URL (its password, a key in its query) are redacted like keys and kept out
of the shell tool's environment."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.core.provider_facts import PROVIDERS
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.conftest import ANTHROPIC_KEY, AZURE_KEY, OPENAI_KEY
from tests.providers.gemini_bedrock import GEMINI_KEY, host_env, signature_is_valid
from tests.server.helpers import served_host

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


@asynccontextmanager
async def spawned(env: dict[str, str], *argv: str) -> AsyncIterator[HostClient]:
    """A host with ``env`` over the tests' environment, initialized: spawned
    with ``argv`` when there are options (its log and trace are read), else
    served in the test's process with ``env`` set while it serves."""
    if not argv:
        async with served_host(env) as served:
            yield served
        return
    client = await HostClient.spawn(host_argv(*argv), env=env)
    try:
        await client.initialize()
        yield client
    finally:
        await client.close()


async def run(client: HostClient, config: dict[str, Any], **params: Any) -> dict[str, Any]:
    """A one-off run of ``config`` (oma/runAgent)."""
    result: dict[str, Any] = await client.request(
        "oma/runAgent", {"config": config, "input": "hello", **params}
    )
    return result


def _keys() -> dict[str, str]:
    return {
        **host_env(),
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "OPENAI_API_KEY": OPENAI_KEY,
        "AZURE_OPENAI_API_KEY": AZURE_KEY,
    }


# (provider, variable, what to add to the simulator's URL, model, the path the request takes)
CASES = [
    ("anthropic", "ANTHROPIC_BASE_URL", "", "claude-x", "/v1/messages"),
    ("openai", "OPENAI_BASE_URL", "/v1", "gpt-x", "/v1/chat/completions"),
    ("gemini", "GOOGLE_GEMINI_BASE_URL", "", "gemini-x", "/v1beta/models/gemini-x:generateContent"),
    ("azure", "AZURE_OPENAI_ENDPOINT", "", "my-deployment", "/openai/v1/responses"),
    (
        "bedrock",
        "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
        "",
        BEDROCK_MODEL,
        f"/model/{BEDROCK_MODEL}/converse",
    ),
    ("bedrock", "AWS_ENDPOINT_URL", "", BEDROCK_MODEL, f"/model/{BEDROCK_MODEL}/converse"),
]


def test_every_variable_the_descriptors_declare_is_tested_here() -> None:
    declared = {(f.name, n) for f in PROVIDERS for n in f.base_url_variables}
    assert declared == {(provider, variable) for provider, variable, *_ in CASES}


@pytest.mark.parametrize(("provider", "variable", "suffix", "model", "path"), CASES)
async def test_the_sdks_variable_brings_a_config_without_base_url_to_its_server(
    sim: Simulator, provider: str, variable: str, suffix: str, model: str, path: str
) -> None:
    env = {**_keys(), variable: sim.base_url + suffix}
    sim.script(Reply.text("from the variable's server"))
    async with spawned(env) as client:
        result = await run(client, {"name": "a", "provider": provider, "model": model})
    assert result["success"] is True, result
    assert result["output"] == "from the variable's server"
    (request,) = sim.requests
    assert request.path == path
    if provider == "bedrock":  # signed for the host it was sent to, as botocore checks
        assert signature_is_valid(request)
    elif provider == "gemini":
        assert request.headers["x-goog-api-key"] == GEMINI_KEY


async def test_a_configs_base_url_wins_over_the_variable(sim: Simulator) -> None:
    with Simulator() as other:
        env = {**_keys(), "ANTHROPIC_BASE_URL": other.base_url}
        async with spawned(env) as client:
            config = {"name": "a", "provider": "anthropic", "model": "m", "baseURL": sim.base_url}
            assert (await run(client, config))["success"] is True
            # The defaults' baseURL is a config's too.
            config = {"name": "b", "provider": "anthropic", "model": "m"}
            listed = await client.request(
                "models/list", {"provider": "anthropic", "baseURL": sim.base_url}
            )
            assert listed["models"]
        assert other.requests == []
    assert [request.path for request in sim.requests] == ["/v1/messages", "/v1/models?limit=1000"]


async def test_bedrocks_own_variable_wins_over_the_global_one_and_both_can_be_off(
    sim: Simulator,
) -> None:
    config = {"name": "a", "provider": "bedrock", "model": BEDROCK_MODEL}
    with Simulator() as other:
        env = {
            **_keys(),
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": sim.base_url,
            "AWS_ENDPOINT_URL": other.base_url,
        }
        async with spawned(env) as client:
            assert (await run(client, config))["success"] is True
        assert len(sim.requests) == 1 and other.requests == []
        # AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true: the default endpoint, of
        # the region (none here, so the run says so before any request).
        env = {**env, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true", "AWS_REGION": ""}
        env |= {"AWS_BEARER_TOKEN_BEDROCK": "bedrock-api-key-DO-NOT-LEAK"}
        async with spawned(env) as client:
            result = await run(client, config)
        assert result["success"] is False
        assert "no AWS region" in result["output"]
        assert len(sim.requests) == 1 and other.requests == []


async def test_openai_base_url_of_another_server_needs_no_key(sim: Simulator) -> None:
    env = {**_keys(), "OPENAI_API_KEY": "", "OPENAI_BASE_URL": sim.base_url + "/v1"}
    async with spawned(env) as client:
        result = await run(client, {"name": "a", "provider": "openai", "model": "llama"})
    assert result["success"] is True, result
    assert "authorization" not in sim.requests[0].headers


@pytest.mark.parametrize(
    "value",
    [
        "127.0.0.1:8080",
        "ftp://gateway.example.com",
        "https://",
        "http://host:99999/x",
        "http://a b",
    ],
)
async def test_a_malformed_variable_fails_the_run_naming_it_and_the_host_goes_on(
    sim: Simulator, value: str
) -> None:
    env = {**_keys(), "ANTHROPIC_BASE_URL": value}
    async with spawned(env) as client:
        result = await run(client, {"name": "a", "provider": "anthropic", "model": "m"})
        assert result["success"] is False
        assert result["errorInfo"]["kind"] == "connection"
        assert "ANTHROPIC_BASE_URL" in result["output"] and repr(value) in result["output"]
        with pytest.raises(Exception) as refused:
            await client.request("models/list", {"provider": "anthropic"})
        assert "ANTHROPIC_BASE_URL" in str(refused.value)
        # The host serves on: an agent with its own baseURL is not concerned.
        config = {"name": "b", "provider": "anthropic", "model": "m", "baseURL": sim.base_url}
        assert (await run(client, config))["success"] is True


async def test_a_malformed_variables_secrets_are_not_in_the_error(sim: Simulator) -> None:
    password, key = "pw-" + secrets.token_hex(8), "key-" + secrets.token_hex(8)
    env = {**_keys(), "GOOGLE_GEMINI_BASE_URL": f"ftp://user:{password}@host/?key={key}"}
    async with spawned(env) as client:
        result = await run(client, {"name": "a", "provider": "gemini", "model": "g"})
    assert result["success"] is False and "GOOGLE_GEMINI_BASE_URL" in result["output"]
    assert "ftp://user:[redacted]@host/?key=[redacted]" in result["output"]
    assert password not in json.dumps(result) and key not in json.dumps(result)


async def test_a_password_in_the_variables_url_is_redacted_everywhere(
    sim: Simulator, tmp_path: Path
) -> None:
    """The URL's password goes out as basic authentication, and a model
    echoing it or the URL shows ``[redacted]`` in the result, the progress,
    the DEBUG log and the trace."""
    password = "gw-" + secrets.token_hex(12)
    url = sim.base_url.replace("http://", f"http://gateway:{password}@")
    trace = tmp_path / "trace.jsonl"
    env = {**_keys(), "ANTHROPIC_BASE_URL": url}
    sim.script(Reply.text(f"the password is {password}, the URL {url}", chunk_size=5))
    async with spawned(env, "--log-level", "DEBUG", "--trace", str(trace)) as client:
        config = {"name": "a", "provider": "anthropic", "model": "m"}
        result = await run(client, config, progress=True)
        notifications = list(client.notifications)
        process = client.process
    assert result["success"] is True
    assert result["output"].count("[redacted]") >= 2, result["output"]
    credentials = base64.b64encode(f"gateway:{password}".encode()).decode()
    assert sim.requests[0].headers["authorization"] == f"Basic {credentials}"
    assert process is not None and process.stderr is not None
    stderr = (await process.stderr.read()).decode()
    written = {
        "result": json.dumps(result),
        "progress": json.dumps(notifications),
        "log": stderr,
        "trace": trace.read_text(),
    }
    assert "agent_complete" in written["progress"]
    assert not [where for where, text in written.items() if password in text]


async def test_the_shell_tool_does_not_see_a_variable_whose_url_has_a_password(
    sim: Simulator, tmp_path: Path
) -> None:
    password = "gw-" + secrets.token_hex(12)
    env = {
        **_keys(),
        "ANTHROPIC_BASE_URL": sim.base_url.replace("http://", f"http://gateway:{password}@"),
        "GOOGLE_GEMINI_BASE_URL": f"https://gemini.example.com/?key={password}x",
        "OPENAI_BASE_URL": "https://plain.example.com/v1",
    }
    shell = tool_use("s", "shell", command="env")
    sim.script(reply(shell), Reply.text("done"))
    async with spawned(env) as client:
        config = {
            "name": "a",
            "provider": "anthropic",
            "model": "m",
            "tools": ["shell"],
            "cwd": str(tmp_path),
            "permissions": [{"tool": "shell", "action": "allow"}],
        }
        result = await run(client, config)
    assert result["success"] is True, result
    content = sim.requests[1].body["messages"][-1]["content"]
    (tool_result,) = [block for block in content if block["type"] == "tool_result"]
    output = json.dumps(tool_result)
    assert "OPENAI_BASE_URL=https://plain.example.com/v1" in output  # the command ran
    assert "ANTHROPIC_BASE_URL" not in output and "GOOGLE_GEMINI_BASE_URL" not in output
    assert password not in output
