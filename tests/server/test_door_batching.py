"""The door's cheap paths for bursts (issue 13): frames read together start
their handlers without an event loop pass each, and answers that are ready
together leave in one write. What a client sees must not change: the gate
still settles on an ``initialize`` or ``shutdown`` read in the same chunk as
the requests after it, a cancel read with its request still cancels it, and
every answer arrives once, in the order it was sent."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from oma_host.cli.client import HostClient, host_argv
from oma_host.server.rpc import Connection
from oma_host.wire.framing import encode_frame

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


def _frames(*messages: dict[str, Any]) -> bytes:
    """Several messages as one chunk of bytes: the host reads them at once."""
    return b"".join(encode_frame(json.dumps(message).encode()) for message in messages)


def _request(msg_id: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def _answers(client: HostClient, ids: set[int], timeout: float = 30) -> dict[int, Any]:
    """The answers to ``ids`` (requests sent with send_bytes), once all came."""
    deadline = time.monotonic() + timeout
    while True:
        found = {
            message["id"]: message
            for message in client.received
            if message.get("id") in ids and "method" not in message
        }
        if len(found) == len(ids) or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.01)


async def test_initialize_read_with_the_requests_after_it_lets_them_in() -> None:
    client = await HostClient.spawn(host_argv())
    try:
        client.send_bytes(
            _frames(
                _request(1, "initialize", {"capabilities": {}}),
                _request(2, "agent/create", {"config": ECHO}),
                _request(3, "agent/list"),
            )
        )
        answers = await _answers(client, {1, 2, 3})
        assert "result" in answers[1], answers[1]
        assert answers[2]["result"] == {"agentId": "agent-1"}, answers[2]
        assert answers[3]["result"]["agents"][0]["agentId"] == "agent-1", answers[3]
    finally:
        await client.close()


async def test_a_request_read_with_a_shutdown_before_it_is_refused() -> None:
    client = await HostClient.spawn(host_argv())
    try:
        await client.initialize()
        client.send_bytes(_frames(_request(50, "shutdown"), _request(51, "agent/list")))
        answers = await _answers(client, {50, 51})
        assert answers[50].get("result") is None and "error" not in answers[50], answers[50]
        error = answers[51]["error"]
        assert error["code"] == -32600 and "shutting down" in error["message"], error
        client.notify("exit")
        assert await client.wait() == 0
    finally:
        await client.close()


async def test_a_burst_read_at_once_is_answered_once_each_with_a_cancel_among_it() -> None:
    client = await HostClient.spawn(host_argv())
    try:
        await client.initialize()
        slow = await client.request(
            "agent/create", {"config": {**ECHO, "name": "slow", "model": "slow-echo"}}
        )
        fast = await client.request("agent/create", {"config": ECHO})
        runs = [
            _request(100 + n, "agent/run", {"agentId": fast["agentId"], "input": f"run {n}"})
            for n in range(200)
        ]
        cancelled = _request(99, "agent/run", {"agentId": slow["agentId"], "input": "stop me"})
        cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 99}}
        client.send_bytes(_frames(cancelled, *runs, cancel))
        ids = {99} | {100 + n for n in range(200)}
        answers = await _answers(client, ids)
        assert set(answers) == ids
        for n in range(200):
            result = answers[100 + n]["result"]
            assert result["success"], result
            assert f"run {n}" in result["output"]
        error = answers[99]["error"]
        assert error["code"] == -32800, error
        assert error["data"]["partial"]["status"]["code"] == "cancelled", error
        ids_seen = [m["id"] for m in client.received if m.get("id") in ids and "method" not in m]
        assert len(ids_seen) == len(ids)  # none answered twice
        runs_ids = {r["result"]["identity"]["runId"] for i, r in answers.items() if i != 99}
        assert len(runs_ids) == 200  # a run id of its own each
    finally:
        await client.close()


async def test_answers_ready_in_one_pass_leave_in_two_writes_in_order() -> None:
    writes: list[bytes] = []
    connection = Connection(writes.append)
    connection.respond(1, "first")  # alone so far: written at once
    assert len(writes) == 1
    connection.notify("$/progress", {"token": "t", "value": "between"})
    connection.respond(2, "second")
    connection.respond(3, "third")
    assert len(writes) == 1  # the rest wait for the end of this pass
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(writes) == 2
    bodies = [
        json.loads(part.split(b"\r\n\r\n", 1)[1])
        for part in writes[1].split(b"Content-Length")
        if part
    ]
    assert [body.get("id", body.get("method")) for body in bodies] == ["$/progress", 2, 3]
    # A later pass: its first answer goes out at once again.
    connection.respond(4, "fourth")
    assert len(writes) == 3


async def test_an_answer_after_queued_ones_never_overtakes_them() -> None:
    writes: list[bytes] = []
    connection = Connection(writes.append)
    connection.notify("$/progress", {"token": "t", "value": "queued"})
    connection.respond(1, "answer")  # written at once, but after the queue
    assert len(writes) == 1
    assert writes[0].index(b"queued") < writes[0].index(b'"id":1')


def test_answers_are_encoded_as_the_json_module_encodes_them() -> None:
    from oma_host.server.rpc import _COMPACT, _encode_message

    samples: list[Any] = [
        {"jsonrpc": "2.0", "id": 7, "result": None},
        {"a": ["é", "\u2028", "\ud800", 1.5, 10**30, -0.0, True, None, {"b": []}]},
        {"nan": float("nan"), "inf": float("inf"), "tab\t": 'quote" back\\'},
    ]
    for sample in samples:
        assert _encode_message(sample) == _COMPACT.encode(sample)


def test_a_result_that_is_not_json_is_an_internal_error_answer() -> None:
    # No event loop runs here: every answer is written at once.
    writes: list[bytes] = []
    connection = Connection(writes.append)
    cycle: dict[str, Any] = {}
    cycle["self"] = cycle
    connection.respond(1, {"thing": object()})
    connection.respond(2, cycle)
    assert len(writes) == 2
    bodies = [json.loads(write.split(b"\r\n\r\n", 1)[1]) for write in writes]
    assert [body["id"] for body in bodies] == [1, 2]
    for body in bodies:
        assert body["error"]["data"]["type"] == "InternalError"
        assert body["error"]["message"].startswith("the result is not JSON: ")
