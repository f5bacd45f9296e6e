"""``oma-host acp``'s auth methods are each agent's provider's own: what
``initialize`` advertises and what ``authenticate`` checks come from the
provider's descriptor (``core/provider_facts.py``), not from Anthropic's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.acp_server.helpers import Door, initialize, step

# Every variable these agents' providers read, unset: each test sets what it checks.
_UNSET = (
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_OPENAI_AD_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
)
_PAIR = "env:AWS_ACCESS_KEY_ID+AWS_SECRET_ACCESS_KEY"


@pytest.fixture
def three(door: Door) -> Door:
    """A door serving a Gemini, an Azure and a Bedrock agent, with no key set."""
    door.write_agents(
        door.llm("azure", provider="azure", model="my-deployment"),
        door.llm("bedrock", provider="bedrock", model="anthropic.claude-sonnet-4-5"),
        first=door.llm("gemini", provider="gemini", model="gemini-2.5-flash"),
    )
    for name in _UNSET:
        door.env.pop(name, None)
    return door


def _methods(door: Door) -> dict[str, dict[str, Any]]:
    (init,) = door.run(initialize())
    return {method["id"]: method for method in init["result"]["authMethods"]}


def test_each_agent_advertises_its_own_providers_variables(three: Door) -> None:
    methods = _methods(three)
    assert sorted(methods) == [
        "env:AWS_ACCESS_KEY_ID+AWS_SECRET_ACCESS_KEY",
        "env:AWS_BEARER_TOKEN_BEDROCK",
        "env:AZURE_OPENAI_AD_TOKEN",
        "env:AZURE_OPENAI_API_KEY",
        "env:GEMINI_API_KEY",
        "env:GOOGLE_API_KEY",
    ]
    assert methods["env:GEMINI_API_KEY"]["vars"] == [{"name": "GEMINI_API_KEY", "secret": True}]
    # The access key id names the key; only the secret and the session token are secrets.
    assert methods[_PAIR]["vars"] == [
        {"name": "AWS_ACCESS_KEY_ID", "secret": False},
        {"name": "AWS_SECRET_ACCESS_KEY", "secret": True},
        {"name": "AWS_SESSION_TOKEN", "secret": True, "optional": True},
    ]


@pytest.mark.parametrize(
    ("method", "variables"),
    [
        ("env:GEMINI_API_KEY", ["GEMINI_API_KEY"]),
        ("env:AZURE_OPENAI_API_KEY", ["AZURE_OPENAI_API_KEY"]),
        ("env:AWS_BEARER_TOKEN_BEDROCK", ["AWS_BEARER_TOKEN_BEDROCK"]),
        (_PAIR, ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"]),
    ],
)
def test_authenticate_checks_the_methods_own_variables(
    three: Door, method: str, variables: list[str]
) -> None:
    # Anthropic's key is set and the method's is not: the method still fails.
    three.env["ANTHROPIC_API_KEY"] = "sk-ant-test-key"
    _, refused = three.run(initialize(), step("authenticate", methodId=method))
    assert refused["error"]["code"] == -32000
    message = refused["error"]["data"]["message"]
    assert all(name in message for name in variables), message
    assert "the environment the editor starts oma-host with" in message
    three.env.update({name: f"value-of-{name}" for name in variables})
    _, accepted = three.run(initialize(), step("authenticate", methodId=method))
    assert "error" not in accepted, accepted


def test_half_of_the_aws_key_pair_does_not_authenticate(three: Door) -> None:
    three.env["AWS_ACCESS_KEY_ID"] = "AKIAOMATESTPAIR00001"
    _, refused = three.run(initialize(), step("authenticate", methodId=_PAIR))
    assert refused["error"]["code"] == -32000
    assert "AWS_SECRET_ACCESS_KEY" in refused["error"]["data"]["message"]


def test_anthropics_variable_is_not_a_method_of_these_agents(three: Door) -> None:
    _, refused = three.run(initialize(), step("authenticate", methodId="env:ANTHROPIC_API_KEY"))
    assert refused["error"]["code"] == -32602
