"""The built-in tools as their declarations make them, through a real
``oma-host`` whose model is the provider simulator: the schemas the provider
is sent (as plain as hand-written ones: no titles, defaults or
``additionalProperties``), and a call the params model refuses coming back
to the model as an error result that names the field."""

from __future__ import annotations

from pathlib import Path

from oma_host.cli.client import HostClient
from oma_host.testing.simulator import Reply, Simulator
from tests.builders import reply, tool_use
from tests.providers.helpers import create_llm, results_sent

PATH = {"type": "string", "description": "relative path"}
SCHEMAS = {
    "file_read": {"type": "object", "properties": {"path": PATH}, "required": ["path"]},
    "grep": {
        "type": "object",
        "properties": {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "file or folder, default ."},
        },
        "required": ["pattern"],
    },
    "glob": {
        "type": "object",
        "properties": {"pattern": {"type": "string"}},
        "required": ["pattern"],
    },
    "file_write": {
        "type": "object",
        "properties": {
            "path": PATH,
            "content": {"type": "string", "description": "the whole new text"},
        },
        "required": ["path", "content"],
    },
    "file_edit": {
        "type": "object",
        "properties": {
            "path": PATH,
            "old": {"type": "string", "description": "the exact text to replace"},
            "new": {"type": "string", "description": "the text to put in its place"},
        },
        "required": ["path", "old", "new"],
    },
    "shell": {
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "the command line, run by /bin/sh -c in the working directory",
            },
            "timeoutMs": {
                "type": "number",
                "minimum": 0,
                "description": "milliseconds it may run before it is ended; absent or 0: the "
                "most allowed (120000 unless the agent sets toolTimeoutMs), and never more than "
                "that",
            },
            "unsandboxed": {
                "type": "boolean",
                "description": "run outside the sandbox; only to retry a command that the "
                "sandbox made fail (a write outside the workspace, the network). The user is "
                "always asked first",
            },
            "reason": {
                "type": "string",
                "description": "with unsandboxed: why the command must run outside the sandbox",
            },
        },
        "required": ["command"],
    },
}


async def test_the_provider_is_sent_each_tools_plain_schema(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    agent = await create_llm(host, sim, "anthropic", tools=list(SCHEMAS), cwd=str(tmp_path))
    sim.script(Reply.text("done"))
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True
    sent = {tool["name"]: tool["input_schema"] for tool in sim.requests[0].body["tools"]}
    assert sent == SCHEMAS


async def test_a_call_the_params_refuse_is_an_error_result_naming_the_field(
    host: HostClient, sim: Simulator, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("one\n")
    allow = [{"tool": "file_edit", "action": "allow"}]
    tools = ["file_read", "grep", "file_edit"]
    agent = await create_llm(
        host, sim, "anthropic", tools=tools, cwd=str(tmp_path), permissions=allow
    )
    sim.script(
        reply(
            tool_use("missing", "file_read", {}),
            tool_use("typed", "grep", {"pattern": 7}),
            tool_use("empty", "file_edit", {"path": "notes.txt", "old": "", "new": "x"}),
            tool_use("extra", "file_read", {"path": "notes.txt", "lines": 3}),
            tool_use("list", "grep", ["needle"]),
        ),
        Reply.text("done"),
    )
    result = await host.request("agent/run", {"agentId": agent, "input": "go"})
    assert result["success"] is True
    answers = {block["tool_use_id"]: block for block in results_sent(sim)}
    assert answers["missing"]["content"] == "file_read: path: Field required"
    assert answers["typed"]["content"] == "grep: pattern: Input should be a valid string"
    assert answers["empty"]["content"] == "file_edit: old must be a non-empty string"
    assert [answers[call].get("is_error") for call in ("missing", "typed", "empty")] == [True] * 3
    assert answers["extra"] == {"type": "tool_result", "tool_use_id": "extra", "content": "one\n"}
    assert answers["list"]["content"] == "grep: the tool input must be a JSON object"
    assert (tmp_path / "notes.txt").read_text() == "one\n"
