"""Bad frames and bad requests get the documented error, and the host keeps serving."""

from __future__ import annotations

import asyncio
import json

from oma_host.cli.client import HostClient, host_argv
from oma_host.wire.framing import encode_frame
from tests.server.helpers import create, expect_error


async def _next_error_with_null_id(client: HostClient, seen: int) -> dict:
    for _ in range(200):
        errors = [m for m in client.received if m.get("id") is None and "error" in m]
        if len(errors) > seen:
            return errors[seen]
        await asyncio.sleep(0.02)
    raise AssertionError("no error response with id null arrived")


async def test_garbage_frames_are_answered_with_parse_error_and_host_keeps_serving(
    host: HostClient,
) -> None:
    host.send_bytes(b"Content-Length: 11\r\n\r\nnot json!!!")
    error = await _next_error_with_null_id(host, 0)
    assert error["error"]["code"] == -32700
    assert error["error"]["data"]["type"] == "ParseError"
    host.send_bytes(b"Content-Length: 4\r\n\r\n\xff\xfe\xfd\xfc")
    error = await _next_error_with_null_id(host, 1)
    assert error["error"]["code"] == -32700
    host.send_bytes(b"this is not a header\r\n\r\n")
    await _next_error_with_null_id(host, 2)
    assert await host.request("agent/list", {}) == {"agents": []}


async def test_an_encoded_surrogate_is_not_utf8_and_never_reaches_a_run(host: HostClient) -> None:
    """The UTF-8 bytes of a surrogate (ED A0 80) are invalid UTF-8: the frame
    is a parse error, never params holding a lone surrogate."""
    agent = await create(host, name="cat", backend={"kind": "process", "command": "cat"})
    body = b'{"jsonrpc":"2.0","id":41,"method":"agent/run","params":{"agentId":"%s","input":"a' % (
        agent.encode()
    )
    host.send_bytes(encode_frame(body + b'\xed\xa0\x80b"}}'))
    error = await _next_error_with_null_id(host, 0)
    assert error["error"]["code"] == -32700
    assert "not valid UTF-8" in error["error"]["message"]
    assert not [m for m in host.received if m.get("id") == 41]
    result = await host.request("agent/run", {"agentId": agent, "input": "a\U0001f600b"})
    assert result["output"] == "a\U0001f600b"


async def test_oversized_frame_is_discarded_answered_with_its_id_and_host_keeps_serving() -> None:
    client = await HostClient.spawn(host_argv("--max-message-bytes", "2000"))
    await client.initialize()
    _, pending = client.start_request("agent/list", {"pad": "x" * 5000}, msg_id=77)
    response = await asyncio.wait_for(pending, 10)
    assert response["error"]["code"] == -32600
    assert "2000" in response["error"]["message"]
    assert await client.request("agent/list", {}) == {"agents": []}
    assert await client.close() == 0


async def test_malformed_messages_are_invalid_requests(server: HostClient) -> None:
    server.send_bytes(b"Content-Length: 2\r\n\r\n[]")
    error = await _next_error_with_null_id(server, 0)
    assert error["error"]["code"] == -32600
    _, pending = server.start_request("agent/list", {})
    await pending
    server.send_bytes(encode_frame(json.dumps({"id": 5, "method": "agent/list"}).encode()))
    for _ in range(200):
        answers = [m for m in server.received if m.get("id") == 5]
        if answers:
            break
        await asyncio.sleep(0.02)
    assert answers[0]["error"]["code"] == -32600


async def test_unknown_method_is_method_not_found(server: HostClient) -> None:
    error = await expect_error(server.request("agent/fly", {}), -32601, "MethodNotFound")
    assert "agent/fly" in error.message
    assert await server.request("agent/list", {}) == {"agents": []}


async def test_a_typo_is_answered_with_the_nearest_known_name(server: HostClient) -> None:
    error = await expect_error(server.request("agent/rum", {}), -32601, "MethodNotFound")
    assert error.message == "agent/rum: no such method; did you mean agent/run?"
    config = {"name": "a", "model": "echo", "provider": "test", "systemPromt": "be brief"}
    error = await expect_error(
        server.request("agent/create", {"config": config}), -32602, "InvalidParams"
    )
    assert error.message.endswith(
        "config.systemPromt: is not a known field; did you mean systemPrompt?"
    ), error.message
    error = await expect_error(
        server.request("agent/history", {"agentID": "x"}), -32602, "InvalidParams"
    )
    assert "agentID: is not a known field; did you mean agentId?" in error.message
    config = {"name": "p", "backend": {"kind": "process", "command": "cat", "agrs": []}}
    error = await expect_error(
        server.request("agent/create", {"config": config}), -32602, "InvalidParams"
    )
    assert error.message.endswith("did you mean args?"), error.message


async def test_bad_params_are_invalid_params_naming_the_field(server: HostClient) -> None:
    error = await expect_error(server.request("agent/run", {"input": "x"}), -32602, "InvalidParams")
    assert "agentId" in error.message
    error = await expect_error(
        server.request(
            "agent/create",
            {"config": {"name": "a", "model": "echo", "provider": "test", "colour": 1}},
        ),
        -32602,
        "InvalidParams",
    )
    assert "colour" in error.message
    error = await expect_error(
        server.request("agent/create", {"config": {"name": "a"}}), -32602, "InvalidParams"
    )
    assert "model" in error.message
    error = await expect_error(
        server.request("agent/create", {"config": {"name": "a", "model": "m", "provider": "nope"}}),
        -32602,
        "InvalidParams",
    )
    assert "nope" in error.message
    await expect_error(server.request("agent/list", [1, 2]), -32602, "InvalidParams")


async def test_unknown_agent_id_is_agent_not_found(server: HostClient) -> None:
    for method in ("agent/run", "agent/prompt"):
        await expect_error(
            server.request(method, {"agentId": "nope", "input": "x"}), -32001, "AgentNotFound"
        )
    for method in ("agent/history", "agent/state", "agent/reset", "agent/dispose"):
        await expect_error(server.request(method, {"agentId": "nope"}), -32001, "AgentNotFound")
    agent = await create(server, name="a", provider="test", model="echo")
    assert await server.request("agent/dispose", {"agentId": agent}) is None
    await expect_error(server.request("agent/state", {"agentId": agent}), -32001, "AgentNotFound")


async def _two_answers(host: HostClient, msg_id: int | str) -> list[dict]:
    """The two answers to requests sent with the same id, in arrival order."""
    for _ in range(400):
        answers = [m for m in host.received if m.get("id") == msg_id]
        if len(answers) == 2:
            return answers
        await asyncio.sleep(0.025)
    raise AssertionError(f"fewer than two answers with id {msg_id!r} arrived")


async def test_a_request_reusing_an_id_in_flight_is_refused_and_the_first_still_answers(
    server: HostClient,
) -> None:
    agent = await create(server, name="slow", provider="test", model="slow-echo")
    _, first = server.start_request("agent/prompt", {"agentId": agent, "input": "x"}, msg_id="dup")
    server.send({"jsonrpc": "2.0", "id": "dup", "method": "agent/list", "params": {}})
    refusal = await asyncio.wait_for(first, 10)  # the refusal comes back first
    assert refusal["error"]["code"] == -32600
    assert refusal["error"]["data"]["type"] == "InvalidRequest"
    assert "already in flight" in refusal["error"]["message"]
    answers = await _two_answers(server, "dup")
    assert answers[1]["result"]["success"] is True  # the prompt ran to its end


async def test_a_cancel_after_a_refused_duplicate_id_still_reaches_the_first(
    server: HostClient,
) -> None:
    agent = await create(
        server,
        name="sleeper",
        backend={"kind": "process", "command": "sleep", "args": ["30"], "input": "none"},
    )
    server.start_request("agent/run", {"agentId": agent, "input": "x"}, msg_id=7)
    await asyncio.sleep(0.2)
    _, second = server.start_request("agent/run", {"agentId": agent, "input": "y"}, msg_id=7)
    refusal = await asyncio.wait_for(second, 10)  # one future per id: this is the refusal
    assert refusal["error"]["code"] == -32600
    server.cancel(7)
    answers = await _two_answers(server, 7)
    assert answers[1]["error"]["code"] == -32800  # the first run, cancelled
