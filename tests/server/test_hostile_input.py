"""Hostile and odd input from outside: each gets the documented answer and
the host keeps serving (findings of a black-box audit, pinned)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from oma_host.cli.client import HostClient, RpcError, host_argv
from oma_host.wire.framing import encode_frame
from tests.builders import tool_use
from tests.server.helpers import InProcessHost, create, expect_error, nested_object

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


async def _error_with_null_id(client: HostClient) -> dict[str, Any]:
    for _ in range(200):
        found = [m for m in client.received if m.get("id") is None and "error" in m]
        if found:
            return found[-1]
        await asyncio.sleep(0.02)
    raise AssertionError("no error with id null arrived")


@pytest.mark.parametrize(
    "frame",
    [
        b"Content-Length: -1\r\n\r\n",
        encode_frame(
            b'{"jsonrpc":"2.0","id":1,"method":"agent/list","params":{"x":' + b"1" * 5000 + b"}}"
        ),
        encode_frame(b'{"jsonrpc":"2.0","id":1,"method":"agent/list","params":{"x":NaN}}'),
    ],
)
async def test_frames_that_are_not_json_are_answered_and_the_host_keeps_serving(
    host: HostClient, frame: bytes
) -> None:
    host.send_bytes(frame)
    error = await _error_with_null_id(host)
    assert error["error"]["code"] == -32700
    assert await host.request("agent/list", {}) == {"agents": []}


async def test_an_oversized_frame_is_answered_with_its_own_top_level_id() -> None:
    client = await HostClient.spawn(host_argv("--max-message-bytes", "5000"))
    await client.initialize()
    params = {
        "input": [
            {
                "role": "user",
                "content": [tool_use("toolu_01", "n", pad="x" * 8000)],
            }
        ]
    }
    body = json.dumps({"jsonrpc": "2.0", "method": "agent/run", "params": params, "id": 42})
    _, pending = client.start_request("agent/list", {}, msg_id=999)  # a decoy still open
    client.send_bytes(encode_frame(body.encode()))
    for _ in range(200):
        if any(m.get("id") == 42 for m in client.received):
            break
        await asyncio.sleep(0.02)
    answer = next(m for m in client.received if m.get("id") == 42)
    assert answer["error"]["code"] == -32600
    assert not any(m.get("id") == "toolu_01" for m in client.received)
    await pending
    # An oversized *response* is dropped, never answered.
    seen = len(client.received)
    client.send_bytes(
        encode_frame(
            json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"pad": "y" * 8000}}).encode()
        )
    )
    assert await client.request("agent/list", {}) == {"agents": []}
    assert not any(m.get("id") == 5 for m in client.received[seen:])
    assert await client.close() == 0


async def test_a_refused_initialize_can_be_retried() -> None:
    client = await InProcessHost.serve()
    await expect_error(client.initialize({"evaluation": {"sample": 2}}), -32602, "InvalidParams")
    await expect_error(client.request("agent/list", {}), -32002, "ServerNotInitialized")
    judge = {"kind": "judge", "config": {**ECHO, "bogus": 1}, "criteria": "c"}
    error = await expect_error(
        client.initialize({"evaluation": {"sample": 1, "scorers": [judge]}}),
        -32602,
        "InvalidParams",
    )
    assert "bogus" in error.message
    await client.initialize()
    assert await client.request("agent/list", {}) == {"agents": []}
    assert await client.close() == 0


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"maxTurns": "3"}, "maxTurns"),
        ({"maxTurns": True}, "maxTurns"),
        ({"timeoutMs": "100"}, "timeoutMs"),
        ({"temperature": True}, "temperature"),
        ({"hooks": {"beforeRun": "yes"}}, "beforeRun"),
    ],
)
async def test_wrong_typed_config_values_are_refused_not_coerced(
    server: HostClient, extra: dict[str, Any], field: str
) -> None:
    error = await expect_error(
        server.request("agent/create", {"config": {**ECHO, **extra}}), -32602, "InvalidParams"
    )
    assert field in error.message


async def test_wrong_typed_run_flags_are_refused(server: HostClient) -> None:
    await expect_error(
        server.request("oma/runAgent", {"config": ECHO, "input": "x", "progress": "yes"}),
        -32602,
        "InvalidParams",
    )
    team = {"agents": [ECHO], "sharedMemory": "yes"}
    await expect_error(
        server.request(
            "oma/runTasks", {"team": team, "tasks": [{"title": "t", "description": "d"}]}
        ),
        -32602,
        "InvalidParams",
    )


@pytest.mark.parametrize(
    "defect",
    [{"tokenUsage": {}}, {"status": {}}, {"status": {"code": "weird"}}, {"identity": "x"}],
)
async def test_a_malformed_after_run_answer_fails_the_turn_and_leaves_history(
    server: HostClient, defect: dict[str, Any]
) -> None:
    agent = await create(server, **ECHO, hooks={"afterRun": True})
    server.handlers["agent/afterRun"] = lambda params: {**params["result"], **defect}
    result = await server.request("agent/prompt", {"agentId": agent, "input": "hello"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "callback"
    assert (await server.request("agent/history", {"agentId": agent})) == {"messages": []}
    assert (await server.request("agent/state", {"agentId": agent}))["status"] == "error"


async def test_malformed_error_answers_from_the_client_fail_the_run_at_once(
    server: HostClient,
) -> None:
    agent = await create(server, **ECHO, hooks={"beforeRun": True, "timeoutMs": 20000})
    for answer in ({"error": "just a string"}, {"error": {"code": "x", "message": "m"}}, {}):

        async def reply(params: Any, answer: dict[str, Any] = answer) -> None:
            raise _RawAnswer(answer)

        server.handlers["agent/beforeRun"] = reply
        result = await asyncio.wait_for(
            server.request("agent/run", {"agentId": agent, "input": "x"}), 10
        )
        assert result["success"] is False and result["errorInfo"]["kind"] == "callback"


class _RawAnswer(Exception):
    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__("raw")
        self.answer = answer


@pytest.fixture(autouse=True)
def _raw_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let a handler send an answer of any shape (the client normally cannot)."""
    original = HostClient._answer

    async def answer(self: HostClient, message: dict[str, Any]) -> None:
        handler = self.handlers.get(message["method"])
        if handler is not None:
            try:
                outcome = handler(message.get("params"))
                if asyncio.iscoroutine(outcome):
                    await outcome
            except _RawAnswer as raw:
                self.send({"jsonrpc": "2.0", "id": message["id"], **raw.answer})
                return
        await original(self, message)

    monkeypatch.setattr(HostClient, "_answer", answer)


@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        ("agent/run", {"agentId": "agent-1", "input": "a\ud800b"}, "input"),
        ("agent/prompt", {"agentId": "agent-2", "input": "x\udfff"}, "input"),
        (
            "agent/run",
            {
                "agentId": "agent-2",
                "input": [{"role": "user", "content": [{"type": "text", "text": "\udc00"}]}],
            },
            "input[0].content[0].text",
        ),
        ("agent/create", {"config": ECHO, "sessionId": "s\ud800"}, "sessionId"),
        ("oma/runAgent", {"config": ECHO, "input": "x", "runId": "r\ud800"}, "runId"),
        ("oma/runAgent", {"config": ECHO, "input": "x", "metadata": {"\ud800": 1}}, "metadata"),
        ("agent/create", {"config": {**ECHO, "systemPrompt": "\ud800"}}, "config.systemPrompt"),
    ],
)
async def test_a_lone_surrogate_in_params_is_invalid_params_at_its_path(
    server: HostClient, method: str, params: dict[str, Any], path: str
) -> None:
    """No UTF-8 text holds a lone surrogate, so no provider, process or store
    could take it: it is refused where the params are read, for every method."""
    await create(server, name="cat", backend={"kind": "process", "command": "cat"})
    await create(server, **ECHO)
    error = await expect_error(server.request(method, params), -32602, "InvalidParams")
    assert error.data["path"] == path
    assert f"{method}: params.{path} holds a lone UTF-16 surrogate" in error.message
    assert (await server.request("agent/history", {"agentId": "agent-2"}))["messages"] == []
    assert len((await server.request("agent/list", {}))["agents"]) == 2


async def test_a_surrogate_pair_is_a_character_like_any_other(server: HostClient) -> None:
    agent = await create(server, name="cat", backend={"kind": "process", "command": "cat"})
    result = await server.request("agent/run", {"agentId": agent, "input": "\ud83d\ude00"})
    assert result["output"] == "\U0001f600"


async def test_a_hook_answer_with_a_lone_surrogate_fails_the_run(server: HostClient) -> None:
    server.handlers["agent/beforeRun"] = lambda params: {"prompt": "\ud800"}
    agent = await create(server, **ECHO, hooks={"beforeRun": True})
    result = await server.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "callback"
    assert "lone UTF-16 surrogate" in result["output"]


async def test_deeply_nested_metadata_is_not_an_internal_error(server: HostClient) -> None:
    deep = nested_object()
    result = await server.request("oma/runAgent", {"config": ECHO, "input": "x", "metadata": deep})
    assert result["success"] is True


async def test_the_agents_own_key_is_not_echoed_in_results_or_progress(server: HostClient) -> None:
    key = "my-very-secret-key-123"
    result = await server.request(
        "oma/runAgent",
        {"config": {**ECHO, "apiKey": key}, "input": f"my key is {key}", "progress": True},
    )
    assert key not in json.dumps(result) and key not in json.dumps(server.notifications)
    assert "my key is [redacted]" in json.dumps(server.notifications)


async def test_a_prompt_queued_behind_dispose_fails(server: HostClient) -> None:
    agent = await create(server, name="slow", provider="test", model="slow-echo")
    _, first = server.start_request("agent/prompt", {"agentId": agent, "input": "one"})
    _, queued = server.start_request("agent/prompt", {"agentId": agent, "input": "two"})
    await asyncio.sleep(0.1)
    assert await server.request("agent/dispose", {"agentId": agent}) is None
    answers = await asyncio.wait_for(asyncio.gather(first, queued), 20)
    assert answers[1]["result"]["success"] is False
    assert answers[1]["result"]["errorInfo"]["kind"] == "disposed"


async def test_a_missing_working_directory_is_named(server: HostClient) -> None:
    agent = await create(
        server, name="p", backend={"kind": "process", "command": "pwd", "cwd": "/no/such/dir"}
    )
    result = await server.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and "/no/such/dir" in result["output"]
    assert "does not exist" in result["output"]


async def test_string_ids_with_surrogates_are_answered(server: HostClient) -> None:
    _, pending = server.start_request("agent/list", {}, msg_id="\ud800")
    response = await asyncio.wait_for(pending, 10)
    assert response["result"] == {"agents": []}
    with pytest.raises(RpcError):
        await server.request("agent/run", {"agentId": "nope", "input": "x"})
