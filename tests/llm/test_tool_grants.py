"""Tool grants (``toolPreset``, ``tools``, ``disallowedTools``) against
open-multi-agent's sets, as the provider is offered them: through a real
``oma-host`` over stdio and through the Python API, the model being the
provider simulator. An unknown name is -32602 naming the field and the name,
and the host goes on serving."""

from __future__ import annotations

from typing import Any

import pytest

from oma_host import Agent, InvalidParamsError
from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.providers.conftest import ANTHROPIC_KEY
from tests.providers.helpers import create_llm, llm_config
from tests.server.helpers import expect_error

# open-multi-agent's presets, written out (its ``bash`` is ``shell`` here).
READONLY = ["file_read", "grep", "glob"]
READWRITE = [*READONLY, "file_write", "file_edit"]
FULL = [*READWRITE, "shell"]

GRANTS: list[tuple[dict[str, Any], list[str]]] = [
    ({"toolPreset": "readonly"}, READONLY),
    ({"toolPreset": "readwrite"}, READWRITE),
    ({"toolPreset": "full"}, FULL),
    # tools adds to the preset; disallowedTools then takes away, from either.
    ({"toolPreset": "readonly", "tools": ["update_plan", "grep"]}, [*READONLY, "update_plan"]),
    (
        {"toolPreset": "full", "tools": ["update_plan"], "disallowedTools": ["shell", "file_read"]},
        ["grep", "glob", "file_write", "file_edit", "update_plan"],
    ),
    ({"tools": ["glob", "file_read"]}, ["glob", "file_read"]),
    ({"tools": ["grep"], "disallowedTools": ["grep"]}, []),
    ({"disallowedTools": ["shell"]}, []),
    ({}, []),  # neither tools nor toolPreset: OMA's default, no built-in tools
]


def _offered(sim: Simulator) -> list[str]:
    """The tool names of the simulator's first request (none when it has no ``tools``)."""
    return [tool["name"] for tool in sim.requests[0].body.get("tools", [])]


@pytest.mark.parametrize(("grant", "expected"), GRANTS)
async def test_the_json_rpc_door_offers_the_granted_tools(
    host: HostClient, sim: Simulator, grant: dict[str, Any], expected: list[str]
) -> None:
    agent = await create_llm(host, sim, "anthropic", **grant)
    sim.script(Reply.text("done"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True, result
    assert _offered(sim) == expected
    if not grant:  # nothing asked: no tools and no system prompt from the host
        assert "tools" not in sim.requests[0].body
        assert "system" not in sim.requests[0].body


@pytest.mark.parametrize(("grant", "expected"), GRANTS)
async def test_the_python_api_offers_the_granted_tools(
    sim: Simulator, grant: dict[str, Any], expected: list[str]
) -> None:
    agent = Agent(llm_config(sim, "anthropic", apiKey=ANTHROPIC_KEY, **grant))
    sim.script(Reply.text("done"))
    result = await agent.run("go")
    await agent.close()
    assert result["success"] is True, result
    assert _offered(sim) == expected


@pytest.mark.parametrize(
    ("grant", "named"),
    [
        (
            {"tools": ["file_read", "file_reed"]},
            "config.tools[1]: unknown tool 'file_reed'; did you mean file_read?",
        ),
        (
            {"disallowedTools": ["shel"]},
            "config.disallowedTools[0]: unknown tool 'shel'; did you mean shell?",
        ),
        (
            {"toolPreset": "fulll"},
            'config.toolPreset must be one of "readonly", "readwrite", "full"; '
            "'fulll' is not one; did you mean full?",
        ),
        ({"toolPreset": "everything"}, "'everything' is not one"),
        ({"disallowedTools": ["delegate"]}, "delegate is offered by listing agents"),
    ],
)
async def test_an_unknown_name_is_invalid_params_naming_field_and_value(
    host: HostClient, sim: Simulator, grant: dict[str, Any], named: str
) -> None:
    error = await expect_error(
        host.request("agent/create", {"config": llm_config(sim, "anthropic", **grant)}),
        -32602,
        "InvalidParams",
    )
    assert named in error.message
    # The host goes on serving: a valid agent is created and runs.
    agent = await create_llm(host, sim, "anthropic", toolPreset="readonly")
    sim.script(Reply.text("still here"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["output"] == "still here"


def test_the_python_api_refuses_an_unknown_name_at_construction(sim: Simulator) -> None:
    with pytest.raises(InvalidParamsError, match=r"config\.disallowedTools\[1\]: unknown tool"):
        Agent(llm_config(sim, "anthropic", disallowedTools=["shell", "bash"]))
