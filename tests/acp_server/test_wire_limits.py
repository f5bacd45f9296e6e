"""What the ACP door refuses to take from an editor, driven through the real
``oma-host acp`` by the raw editor: a line over ``--max-message-bytes``, a
lone UTF-16 surrogate, and an editor that sends and never reads (the door
stops reading rather than keep the unsent answers)."""

from __future__ import annotations

import asyncio
import json

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, text
from tests.acp_server.raw_editor import TIMEOUT_S, raw_editor, stderr_of


async def test_a_line_over_max_message_bytes_is_dropped_and_its_request_answered(
    door: Door,
) -> None:
    door.flags += ["--max-message-bytes", "100000"]
    async with raw_editor(door) as editor:
        request = {"jsonrpc": "2.0", "id": 41, "method": "initialize"}
        request["params"] = {"protocolVersion": 1, "pad": "x" * 300_000}
        editor.send_line(json.dumps(request).encode() + b"\n")
        notice = {"jsonrpc": "2.0", "method": "_note", "params": {"pad": "y" * 300_000}}
        editor.send_line(json.dumps(notice).encode() + b"\n")
        answer = await editor.answer(41)
        assert answer["error"]["code"] == -32600, answer
        reason = answer["error"]["data"]["reason"]
        assert "over the limit of 100000 (--max-message-bytes)" in reason, reason
        init = await editor.call("initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1  # and the door serves on
        err = await stderr_of(editor)
    # The notification has no id to answer: it is logged, once, with its size.
    assert err.count("skipped a line: the line is 300") == 1, err


async def test_a_lone_surrogate_is_invalid_params_at_its_path(door: Door) -> None:
    door.sim.script(Reply.text("fine"))
    async with raw_editor(door) as editor:
        session_id = await editor.start(door)
        prompt = '[{"type":"text","text":"a\\ud800b"}]'
        line = (
            f'{{"jsonrpc":"2.0","id":50,"method":"session/prompt",'
            f'"params":{{"sessionId":"{session_id}","prompt":{prompt}}}}}\n'
        )
        editor.send_line(line.encode())
        answer = await editor.answer(50)
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"]["path"] == "prompt[0].text", answer
        assert "lone UTF-16 surrogate" in answer["error"]["data"]["reason"]
        cancel = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"\\udc00"}}'
        editor.send_line(cancel.encode() + b"\n")
        # A pair is one character, and welcome.
        reply = await editor.call(
            "session/prompt", {"sessionId": session_id, "prompt": [text("pair \U0001f600")]}
        )
        assert reply["result"]["stopReason"] == "end_turn", reply
        err = await stderr_of(editor)
    assert "dropped the notification 'session/cancel': its params hold a lone surrogate" in err
    assert "Traceback" not in err, err
    assert "pair \U0001f600" in json.dumps(door.sim.requests[-1].body, ensure_ascii=False)


async def test_an_editor_that_never_reads_stops_the_door_reading(door: Door) -> None:
    """Each request's answer is as long as the request (an unknown method is
    named in its -32601), so an editor that writes and never reads fills the
    door's output: the door stops reading once 1 MiB of it is unsent, and the
    editor's writes block. Once it reads, every request is answered."""
    method = "_x" + "m" * 100_000
    async with raw_editor(door, line_limit=2**18) as editor:
        stdin = editor.process.stdin
        assert stdin is not None
        sent = 0
        blocked = False
        for number in range(400):  # 40 MB, if the door read on
            message = {"jsonrpc": "2.0", "id": 1000 + number, "method": method, "params": {}}
            stdin.write(json.dumps(message).encode() + b"\n")
            sent += 1
            try:
                await asyncio.wait_for(stdin.drain(), 5)
            except TimeoutError:
                blocked = True
                break
        assert blocked, f"the door read all {sent} requests while none of its answers was read"
        assert sent < 100, sent
        answers = [await editor.answer(1000 + number) for number in range(sent)]
        assert {answer["error"]["code"] for answer in answers} == {-32601}
        assert all(answer["error"]["data"]["method"] == method for answer in answers)
        await asyncio.wait_for(stdin.drain(), TIMEOUT_S)
        init = await editor.call("initialize", {"protocolVersion": 1})
        assert init["result"]["protocolVersion"] == 1
