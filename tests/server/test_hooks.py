"""agent/beforeRun and agent/afterRun: server-to-client requests and the
rewrite rules (docs/protocol.md, "Hooks and other requests to the client")."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from oma_host.cli.client import HostClient
from tests.builders import image as image_block
from tests.builders import text_message
from tests.server.helpers import create, process_config, received

SECRET = "sk-test-do-not-leak-0123456789abcdef"


def hooked(**extra: Any) -> dict[str, Any]:
    return {
        "name": "hooked",
        "provider": "test",
        "model": "echo",
        "apiKey": SECRET,
        "hooks": {"beforeRun": True, "afterRun": False, "timeoutMs": 2000},
        **extra,
    }


async def test_before_run_sees_messages_prompt_and_config_without_secrets(
    server: HostClient,
) -> None:
    seen: list[Any] = []
    server.handlers["agent/beforeRun"] = lambda params: seen.append(params)
    agent = await create(server, **hooked())
    turn = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Hello "},
            image_block(),
            {"type": "text", "text": "world"},
        ],
    }
    await server.request("agent/run", {"agentId": agent, "input": [turn], "runId": "r9"})
    params = seen[0]
    assert params["agentName"] == "hooked"
    assert params["runId"] == "r9"
    assert params["prompt"] == "Hello world"
    assert params["messages"] == [turn]
    assert "hooks" not in params["agent"] and "apiKey" not in params["agent"]
    assert params["agent"]["model"] == "echo"
    everything = json.dumps(server.received)
    assert SECRET not in everything


async def test_image_only_turn_gives_an_empty_prompt(server: HostClient) -> None:
    seen: list[Any] = []
    server.handlers["agent/beforeRun"] = lambda params: seen.append(params["prompt"])
    agent = await create(server, **hooked())
    await server.request("agent/prompt", {"agentId": agent, "input": [image_block()]})
    assert seen == [""]


async def test_prompt_rewrite_replaces_text_blocks_where_the_first_stood(
    server: HostClient,
) -> None:
    server.handlers["agent/beforeRun"] = lambda params: {"prompt": "REWRITTEN"}
    agent = await create(server, **hooked())
    blocks = [
        image_block("AAAA"),
        {"type": "text", "text": "one"},
        image_block("BBBB"),
        {"type": "text", "text": "two"},
    ]
    result = await server.request("agent/prompt", {"agentId": agent, "input": blocks})
    assert received(result) == [
        {
            "role": "user",
            "content": [
                image_block("AAAA"),
                {"type": "text", "text": "REWRITTEN"},
                image_block("BBBB"),
            ],
        }
    ]
    # History keeps the caller's original turn.
    history = (await server.request("agent/history", {"agentId": agent}))["messages"]
    assert history[0] == {"role": "user", "content": blocks}


async def test_prompt_rewrite_of_an_image_only_turn_puts_text_first(server: HostClient) -> None:
    server.handlers["agent/beforeRun"] = lambda params: {"prompt": "caption this"}
    agent = await create(server, **hooked())
    result = await server.request(
        "agent/run", {"agentId": agent, "input": [{"role": "user", "content": [image_block()]}]}
    )
    assert received(result)[0]["content"] == [
        {"type": "text", "text": "caption this"},
        image_block(),
    ]


async def test_unchanged_prompt_and_null_answer_change_nothing(server: HostClient) -> None:
    answers = iter([None, "same"])

    def answer(params: Any) -> Any:
        value = next(answers)
        return None if value is None else {"prompt": params["prompt"]}

    server.handlers["agent/beforeRun"] = answer
    agent = await create(server, **hooked())
    turn = [text_message("a"), text_message("b", "assistant"), text_message("c")]
    for _ in range(2):
        result = await server.request("agent/run", {"agentId": agent, "input": turn})
        assert received(result) == turn


async def test_messages_replacement_then_prompt_rewrite(server: HostClient) -> None:
    replacement = [
        text_message("system note"),
        text_message("ack", "assistant"),
        text_message("old"),
    ]
    server.handlers["agent/beforeRun"] = lambda params: {"prompt": "new", "messages": replacement}
    agent = await create(server, **hooked())
    result = await server.request("agent/run", {"agentId": agent, "input": "original"})
    assert received(result) == [*replacement[:2], text_message("new")]


async def test_hook_failures_fail_the_run_with_callback_kind(server: HostClient) -> None:
    agent = await create(server, **hooked(hooks={"beforeRun": True, "timeoutMs": 300}))

    async def slow(params: Any) -> Any:
        await asyncio.sleep(5)

    def broken(params: Any) -> Any:
        raise RuntimeError("hook exploded")

    for handler, fragment in (
        (broken, "hook exploded"),
        (lambda params: 42, "beforeRun answer"),
        (lambda params: {"prompt": 7}, "prompt must be a string"),
        (slow, "300 ms"),
    ):
        server.handlers["agent/beforeRun"] = handler
        result = await server.request("agent/run", {"agentId": agent, "input": "x"})
        assert result["success"] is False
        assert result["status"]["code"] == "error"
        assert result["errorInfo"]["kind"] == "callback"
        assert fragment in result["errorInfo"]["message"]


async def test_hook_messages_failing_the_guard_fail_the_run_as_a_callback(
    server: HostClient,
) -> None:
    # The hook is a callback: its bad answer is a failed run, not a -32602.
    agent = await create(server, **hooked(history=[text_message("kept")]))
    for messages, message in (
        (
            [{"role": "user", "content": "not blocks"}],
            'beforeRun.messages[0].content must be an array of blocks; for text use [{"type": '
            '"text", "text": ...}]',
        ),
        (
            [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n"}]}],
            "beforeRun.messages[0].content[0].input must be an object",
        ),
        (None, "beforeRun.messages must be an array, got null"),
    ):
        server.handlers["agent/beforeRun"] = lambda params, m=messages: {
            "prompt": params["prompt"],
            "messages": m,
        }
        for method in ("agent/run", "agent/prompt"):
            result = await server.request(method, {"agentId": agent, "input": "x"})
            assert result["success"] is False
            assert result["status"] == {"code": "error", "message": message}
            assert result["errorInfo"] == {"kind": "callback", "message": message}
            assert result["output"] == message  # the echo model was never called
        token = f"t-{len(server.received)}"
        result = await server.request(
            "agent/stream", {"agentId": agent, "input": "x", "partialResultToken": token}
        )
        assert result["errorInfo"]["kind"] == "callback"
        assert [event["type"] for event in server.progress(token)] == ["error"]
    history = await server.request("agent/history", {"agentId": agent})
    assert history == {"messages": [text_message("kept")]}


async def test_external_prompt_hook_sees_the_history_and_may_not_trim_it(
    server: HostClient, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    history = [text_message("before"), text_message("reply", "assistant")]
    agent = await create(
        server,
        **process_config("ext", f"touch {marker}; cat"),
        history=history,
        hooks={"beforeRun": True},
    )
    seen: list[Any] = []

    def trim(params: Any) -> Any:
        seen.append(params["messages"])
        return {"prompt": params["prompt"], "messages": params["messages"][-1:]}

    server.handlers["agent/beforeRun"] = trim
    result = await server.request("agent/prompt", {"agentId": agent, "input": "now"})
    assert seen == [[*history, text_message("now")]]
    assert result["success"] is False
    assert "beforeRun.messages cannot be forwarded without loss" in result["output"]
    assert not marker.exists()
    assert await server.request("agent/history", {"agentId": agent}) == {"messages": history}


async def test_external_agent_takes_prompt_rewrites_but_not_message_changes(
    server: HostClient, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    agent = await create(
        server,
        **process_config("ext", f"touch {marker}; cat"),
        hooks={"beforeRun": True},
    )
    server.handlers["agent/beforeRun"] = lambda params: {"prompt": params["prompt"].upper()}
    result = await server.request("agent/run", {"agentId": agent, "input": "shout this"})
    assert result["output"] == "SHOUT THIS"
    marker.unlink()
    server.handlers["agent/beforeRun"] = lambda params: {
        "prompt": params["prompt"],
        "messages": [text_message("smuggled"), *params["messages"]],
    }
    result = await server.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["status"]["code"] == "error"
    assert "beforeRun.messages cannot be forwarded without loss" in result["output"]
    assert not marker.exists()
    # Returning the messages unchanged is not a change.
    server.handlers["agent/beforeRun"] = lambda params: {
        "prompt": params["prompt"],
        "messages": params["messages"],
    }
    result = await server.request("agent/run", {"agentId": agent, "input": "same"})
    assert result["success"] and result["output"] == "same"


async def test_after_run_result_replaces_the_result(server: HostClient) -> None:
    seen: list[Any] = []

    def after(params: Any) -> Any:
        seen.append(params)
        return {**params["result"], "output": "replaced by the client"}

    server.handlers["agent/afterRun"] = after
    agent = await create(server, **hooked(hooks={"afterRun": True}))
    result = await server.request("agent/run", {"agentId": agent, "input": "x", "runId": "a1"})
    assert result["output"] == "replaced by the client"
    assert seen[0]["agentName"] == "hooked" and seen[0]["runId"] == "a1"
    assert seen[0]["result"]["success"] is True
    server.handlers["agent/afterRun"] = lambda params: {"output": 3}
    result = await server.request("agent/run", {"agentId": agent, "input": "x"})
    assert result["success"] is False and result["errorInfo"]["kind"] == "callback"
