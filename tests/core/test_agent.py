"""The Agent core through its Python API (docs/protocol.md, "Methods",
"Hooks and other requests to the client", "External backends"), with the
in-process ``test`` provider and real process-backend commands."""

from __future__ import annotations

import asyncio
import copy
import json
import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from oma_host import AbortSignal, Agent, InvalidMessageError, OpenMultiAgent
from oma_host.core.hooks import LOSSY_MESSAGES, AfterRunContext, BeforeRunContext
from oma_host.testing.recording import shared_recording_adapter
from tests.builders import assistant, image, text, tool_use, user

# --------------------------------------------------------------------------
# helpers


def llm(name: str = "a", model: str = "echo", **extra: Any) -> dict[str, Any]:
    return {"name": name, "provider": "test", "model": model, **extra}


def process(command: str, *args: str, name: str = "p", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "backend": {"kind": "process", "command": command, "args": list(args), **extra},
    }


def marker_process(marker: Path, name: str = "p") -> dict[str, Any]:
    """A process agent that leaves ``marker`` behind when it is spawned, then echoes stdin."""
    return process("sh", "-c", f"touch {shlex.quote(str(marker))}; cat", name=name)


def echoed(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages the echo model received, read back from its reply."""
    assert result["success"], result
    return json.loads(result["output"])["messages"]


def calls() -> int:
    return len(shared_recording_adapter().calls)


async def collect(stream: Any) -> list[dict[str, Any]]:
    return [event async for event in stream]


def make_hook(body: Any, is_async: bool) -> Any:
    """``body`` as a sync or an async hook."""
    if not is_async:
        return body

    async def hook(ctx: Any) -> Any:
        await asyncio.sleep(0)
        return body(ctx)

    return hook


HISTORY = [user(text("earlier question")), assistant(text("earlier answer"))]
STRUCTURED = [user(text("look at "), image(), text("this"))]
INVALID = [{"role": "user", "content": [{"type": "text", "text": 1}]}]

sync_and_async = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


# --------------------------------------------------------------------------
# run, stream and prompt: conversation behaviour


async def test_run_is_fresh_neither_reading_nor_changing_history():
    agent = Agent(llm(history=HISTORY))
    result = await agent.run("now")
    assert echoed(result) == [user(text("now"))]
    assert agent.get_history() == HISTORY


async def test_run_with_structured_input_sends_exactly_those_messages():
    agent = Agent(llm(history=HISTORY))
    messages = [user(text("q")), assistant(text("a")), user(text("q2"), image())]
    result = await agent.run(messages)
    assert echoed(result) == messages
    assert agent.get_history() == HISTORY


async def test_stream_is_fresh_neither_reading_nor_changing_history():
    agent = Agent(llm(history=HISTORY))
    events = await collect(agent.stream(STRUCTURED))
    assert echoed(events[-1]["data"]) == STRUCTURED
    assert agent.get_history() == HISTORY


async def test_stream_yields_text_events_then_one_final_done():
    agent = Agent(llm())
    events = await collect(agent.stream("stream me please, this is long enough to chunk"))
    assert len(events) >= 3
    assert [event["type"] for event in events[:-1]] == ["text"] * (len(events) - 1)
    assert events[-1]["type"] == "done"
    done = events[-1]["data"]
    assert done["success"] is True
    assert done["status"]["code"] == "ok"
    assert "".join(event["data"] for event in events[:-1]) == done["output"]


async def test_stream_of_a_failing_run_sends_an_error_event_before_done():
    agent = Agent(llm(model="fail"))
    events = await collect(agent.stream("x"))
    assert [event["type"] for event in events] == ["error", "done"]
    assert events[0]["data"]["message"]
    assert events[1]["data"]["success"] is False
    assert events[1]["data"]["status"]["code"] == "error"


async def test_prompt_appends_exactly_the_user_turn_and_the_reply():
    agent = Agent(llm())
    first = await agent.prompt("hi")
    assert agent.get_history() == [user(text("hi")), assistant(text(first["output"]))]
    second = await agent.prompt("again")
    assert echoed(second) == [
        user(text("hi")),
        assistant(text(first["output"])),
        user(text("again")),
    ]
    assert agent.get_history() == [
        user(text("hi")),
        assistant(text(first["output"])),
        user(text("again")),
        assistant(text(second["output"])),
    ]


async def test_prompt_string_becomes_one_text_block():
    agent = Agent(llm())
    await agent.prompt("just text")
    assert agent.get_history()[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "just text"}],
    }


async def test_prompt_blocks_become_exactly_one_user_message_holding_them():
    agent = Agent(llm(history=HISTORY))
    blocks = [text("describe"), image(), {"type": "custom_block", "x": [1]}]
    result = await agent.prompt(blocks)
    assert echoed(result) == [*HISTORY, {"role": "user", "content": blocks}]
    history = agent.get_history()
    assert len(history) == len(HISTORY) + 2
    assert history[len(HISTORY)] == {"role": "user", "content": blocks}
    assert history[-1]["role"] == "assistant"


async def test_prompt_cannot_insert_an_assistant_turn():
    agent = Agent(llm())
    with pytest.raises(InvalidMessageError) as info:
        await agent.prompt([assistant(text("I said this"))])
    assert info.value.path == "input[0].type"
    assert agent.get_history() == []


async def test_prompt_keeps_its_own_copy_of_the_callers_blocks():
    agent = Agent(llm())
    blocks = [text("original"), image()]
    await agent.prompt(blocks)
    blocks[0]["text"] = "changed"
    blocks[1]["source"]["data"] = "changed"
    blocks.append(text("more"))
    assert agent.get_history()[0] == user(text("original"), image())


async def test_get_history_returns_a_copy():
    agent = Agent(llm(history=HISTORY))
    copy_ = agent.get_history()
    copy_[0]["content"][0]["text"] = "tampered"
    copy_[1]["content"].append(text("x"))
    copy_.append(user(text("injected")))
    assert agent.get_history() == HISTORY
    result = await agent.prompt("next")
    assert echoed(result) == [*HISTORY, user(text("next"))]


async def test_mutating_a_prompt_result_does_not_change_history():
    agent = Agent(llm())
    result = await agent.prompt("hi")
    reply = result["output"]
    result["messages"][0]["content"][0]["text"] = "tampered"
    result["messages"].append(user(text("injected")))
    assert agent.get_history() == [user(text("hi")), assistant(text(reply))]


async def test_reset_clears_history_and_returns_to_idle():
    agent = Agent(llm(history=HISTORY))
    await agent.prompt("hi")
    assert agent.state["status"] == "completed"
    agent.reset()
    assert agent.get_history() == []
    assert agent.state == {"status": "idle", "tokenUsage": {"input_tokens": 0, "output_tokens": 0}}
    result = await agent.prompt("fresh")
    assert echoed(result) == [user(text("fresh"))]


async def test_state_goes_idle_running_completed():
    seen: list[str] = []
    agent: Agent

    def hook(ctx: BeforeRunContext) -> None:
        seen.append(agent.state["status"])

    agent = Agent(llm(), before_run=hook)
    assert agent.state["status"] == "idle"
    result = await agent.run("x")
    assert seen == ["running"]
    assert agent.state["status"] == "completed"
    assert agent.state["tokenUsage"] == result["tokenUsage"]
    assert result["tokenUsage"]["input_tokens"] > 0


async def test_state_is_error_after_a_failed_run():
    agent = Agent(llm(model="fail"))
    result = await agent.run("x")
    assert result["success"] is False
    assert result["status"]["code"] == "error"
    assert "errorInfo" in result
    assert agent.state["status"] == "error"


async def test_failed_prompt_leaves_history_unchanged():
    agent = Agent(llm(model="fail", history=HISTORY))
    result = await agent.prompt("x")
    assert result["success"] is False
    assert agent.get_history() == HISTORY


async def test_run_id_is_reported_in_the_result_identity():
    agent = Agent(llm())
    result = await agent.run("x", run_id="run_given")
    assert result["identity"] == {"runId": "run_given"}
    other = await agent.run("x")
    assert other["identity"]["runId"] and other["identity"]["runId"] != "run_given"


# --------------------------------------------------------------------------
# config.history


@pytest.mark.parametrize(
    ("history", "path"),
    [
        (
            [user(text("ok")), {"role": "user", "content": [text(1)]}],  # type: ignore[arg-type]
            "config.history[1].content[0].text",
        ),
        ([{"role": "tool", "content": []}], "config.history[0].role"),
        (
            [user(tool_use("t", "n", cb=print))],
            "config.history[0].content[0].input.cb",
        ),
        ({"role": "user", "content": []}, "config.history"),
        ("a string", "config.history"),
    ],
)
def test_invalid_history_is_rejected_at_construction(history: Any, path: str):
    with pytest.raises(InvalidMessageError) as info:
        Agent(llm(history=history))
    assert info.value.path == path
    assert info.value.path.startswith("config.history")
    assert str(info.value).startswith(path)


def test_empty_history_is_accepted():
    assert Agent(llm(history=[])).get_history() == []


async def test_history_is_copied_at_construction():
    history = copy.deepcopy(HISTORY)
    agent = Agent(llm(history=history))
    history[0]["content"][0]["text"] = "tampered"
    history.append(user(text("injected")))
    assert agent.get_history() == HISTORY
    result = await agent.prompt("now")
    assert echoed(result) == [*HISTORY, user(text("now"))]


async def test_history_seeds_prompt_context_for_llm_agents():
    agent = Agent(llm(history=HISTORY))
    result = await agent.prompt("and now?")
    assert echoed(result) == [*HISTORY, user(text("and now?"))]
    assert agent.get_history()[: len(HISTORY)] == HISTORY


async def test_history_never_seeds_a_process_backend():
    agent = Agent({**process("cat"), "history": HISTORY})
    result = await agent.prompt("only this")
    assert result["success"], result
    assert result["output"] == "only this"
    assert agent.get_history() == [*HISTORY, user(text("only this")), assistant(text("only this"))]


# --------------------------------------------------------------------------
# validation happens first


async def test_stream_validates_at_call_time_before_any_iteration():
    called: list[Any] = []
    agent = Agent(llm(), before_run=called.append)
    before = calls()
    with pytest.raises(InvalidMessageError) as info:
        agent.stream(INVALID)  # not iterated, not awaited
    assert info.value.path == "input[0].content[0].text"
    await asyncio.sleep(0.01)
    assert called == []
    assert calls() == before
    assert agent.state["status"] == "idle"


@pytest.mark.parametrize("method", ["run", "stream", "prompt"])
@pytest.mark.parametrize(
    "bad_input",
    [
        pytest.param(INVALID, id="bad-text"),
        pytest.param([], id="empty"),
        pytest.param(42, id="number"),
        pytest.param(
            [user(tool_use("t", "n", s={1}))],
            id="uncopyable",
        ),
    ],
)
async def test_invalid_input_touches_nothing(method: str, bad_input: Any):
    hook_calls: list[Any] = []
    agent = Agent(llm(history=HISTORY), before_run=hook_calls.append, after_run=hook_calls.append)
    await agent.run("warm up")  # state "completed" with usage, so a reset would show
    hook_calls.clear()
    state_before = agent.state
    before = calls()

    with pytest.raises(InvalidMessageError):
        if method == "stream":
            await collect(agent.stream(bad_input))
        else:
            await getattr(agent, method)(bad_input)

    assert hook_calls == []
    assert calls() == before
    assert agent.state == state_before
    assert agent.get_history() == HISTORY


# --------------------------------------------------------------------------
# beforeRun / afterRun hooks


@sync_and_async
async def test_hook_messages_are_a_copy_that_cannot_change_the_run(is_async: bool):
    def body(ctx: BeforeRunContext) -> None:
        ctx.messages[0]["content"][0]["text"] = "tampered"
        ctx.messages[0]["content"].append(text("extra"))
        ctx.messages.append(user(text("injected")))

    agent = Agent(llm(), before_run=make_hook(body, is_async))
    messages = copy.deepcopy(STRUCTURED)
    result = await agent.run(messages)
    assert echoed(result) == STRUCTURED
    assert messages == STRUCTURED


@sync_and_async
async def test_hook_sees_prompt_messages_and_public_config(is_async: bool):
    seen: list[BeforeRunContext] = []

    def body(ctx: BeforeRunContext) -> None:
        seen.append(ctx)

    config = llm(
        name="hooked",
        apiKey="sk-test-secret-value-123456",
        hooks={"beforeRun": True, "timeoutMs": 5000},
        systemPrompt="be brief",
        history=HISTORY,
    )
    agent = Agent(config, before_run=make_hook(body, is_async))
    await agent.prompt([text("one "), image(), text("two")], run_id="run_hook")
    [ctx] = seen
    assert ctx.agent_name == "hooked"
    assert ctx.run_id == "run_hook"
    assert ctx.prompt == "one two"
    assert ctx.messages == [*HISTORY, user(text("one "), image(), text("two"))]
    assert ctx.agent["name"] == "hooked"
    assert ctx.agent["systemPrompt"] == "be brief"
    assert "hooks" not in ctx.agent
    assert "apiKey" not in ctx.agent
    assert "sk-test-secret-value-123456" not in json.dumps(ctx.agent)


async def test_hook_prompt_is_empty_for_an_image_only_turn():
    seen: list[str] = []
    agent = Agent(llm(), before_run=lambda ctx: seen.append(ctx.prompt))
    await agent.run([user(text("earlier")), assistant(text("ok")), user(image())])
    assert seen == [""]


async def test_hook_prompt_concatenates_text_blocks_of_the_latest_user_message():
    seen: list[str] = []
    agent = Agent(llm(), before_run=lambda ctx: seen.append(ctx.prompt))
    await agent.run(
        [user(text("old")), assistant(text("r")), user(text("a"), image(), text("b"), text("c"))]
    )
    assert seen == ["abc"]


@sync_and_async
async def test_hook_answer_none_leaves_the_input_unchanged(is_async: bool):
    agent = Agent(llm(), before_run=make_hook(lambda ctx: None, is_async))
    assert echoed(await agent.run(STRUCTURED)) == STRUCTURED


@sync_and_async
async def test_hook_answer_unchanged_prompt_leaves_the_input_unchanged(is_async: bool):
    agent = Agent(llm(), before_run=make_hook(lambda ctx: {"prompt": ctx.prompt}, is_async))
    # Two text blocks stay two text blocks when the prompt was not changed.
    assert echoed(await agent.run(STRUCTURED)) == STRUCTURED


@sync_and_async
async def test_hook_prompt_rewrite_replaces_the_latest_user_text_blocks(is_async: bool):
    agent = Agent(llm(), before_run=make_hook(lambda ctx: {"prompt": "NEW"}, is_async))
    messages = [
        user(text("first")),
        assistant(text("reply")),
        user(image("ONE"), text("a"), image("TWO"), text("b")),
    ]
    result = await agent.run(messages)
    assert echoed(result) == [
        user(text("first")),
        assistant(text("reply")),
        user(image("ONE"), text("NEW"), image("TWO")),
    ]


async def test_hook_prompt_rewrite_of_an_image_only_turn_puts_text_in_front():
    agent = Agent(llm(), before_run=lambda ctx: {"prompt": "caption"})
    result = await agent.run([user(image("A"), image("B"))])
    assert echoed(result) == [user(text("caption"), image("A"), image("B"))]


async def test_hook_answer_may_be_an_object_with_a_prompt_attribute():
    agent = Agent(llm(), before_run=lambda ctx: SimpleNamespace(prompt="attr"))
    assert echoed(await agent.run("x")) == [user(text("attr"))]


@sync_and_async
async def test_hook_messages_replace_the_input(is_async: bool):
    replacement = [user(text("r1")), assistant(text("r2")), user(text("r3"), image())]
    agent = Agent(
        llm(),
        before_run=make_hook(lambda ctx: {"prompt": ctx.prompt, "messages": replacement}, is_async),
    )
    assert echoed(await agent.run("original")) == replacement


@sync_and_async
async def test_hook_messages_replace_first_then_the_prompt_rewrites(is_async: bool):
    replacement = [
        user(text("r1")),
        assistant(text("r2")),
        user(image("X"), text("r3"), text("r4")),
    ]
    agent = Agent(
        llm(), before_run=make_hook(lambda ctx: {"prompt": "P", "messages": replacement}, is_async)
    )
    result = await agent.run("original")
    assert echoed(result) == [user(text("r1")), assistant(text("r2")), user(image("X"), text("P"))]
    assert replacement[2] == user(image("X"), text("r3"), text("r4"))


async def test_hook_messages_are_copied_when_applied():
    replacement = [user(text("r"))]

    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        return {"prompt": ctx.prompt, "messages": replacement}

    agent = Agent(llm(), before_run=hook)
    result = await agent.run("x")
    replacement[0]["content"][0]["text"] = "mutated after"
    assert echoed(result) == [user(text("r"))]
    assert shared_recording_adapter().calls[-1].messages == [user(text("r"))]


async def test_hook_that_edits_ctx_prompt_and_returns_it_still_rewrites():
    # Rule 2 compares the answer with the prompt that was *sent*; a hook that
    # writes its new prompt into its own context must not hide the change.
    def hook(ctx: BeforeRunContext) -> dict[str, Any]:
        ctx.prompt = ctx.prompt.upper()
        return {"prompt": ctx.prompt}

    agent = Agent(llm(), before_run=hook)
    result = await agent.run("shout this")
    assert echoed(result) == [user(text("SHOUT THIS"))]


async def test_stored_history_keeps_the_callers_turn_not_the_rewrite():
    agent = Agent(llm(), before_run=lambda ctx: {"prompt": "rewritten"})
    result = await agent.prompt([text("mine"), image()])
    assert echoed(result) == [user(text("rewritten"), image())]
    assert agent.get_history() == [user(text("mine"), image()), assistant(text(result["output"]))]


async def test_stored_history_keeps_the_callers_turn_when_hook_replaces_messages():
    agent = Agent(
        llm(history=HISTORY),
        before_run=lambda ctx: {"prompt": ctx.prompt, "messages": [user(text("swap"))]},
    )
    result = await agent.prompt("mine")
    assert echoed(result) == [user(text("swap"))]
    assert agent.get_history() == [*HISTORY, user(text("mine")), assistant(text(result["output"]))]


def _raise(ctx: Any) -> Any:
    raise RuntimeError("hook exploded")


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda ctx: "just a string", id="string"),
        pytest.param(lambda ctx: 42, id="number"),
        pytest.param(lambda ctx: {}, id="no-prompt"),
        pytest.param(lambda ctx: {"prompt": 5}, id="prompt-not-string"),
        pytest.param(lambda ctx: {"prompt": None}, id="prompt-null"),
        pytest.param(lambda ctx: {"messages": [user(text("m"))]}, id="messages-without-prompt"),
        pytest.param(lambda ctx: ["prompt"], id="list"),
        pytest.param(_raise, id="raises"),
    ],
)
@sync_and_async
async def test_hook_failure_or_malformed_answer_fails_the_run_as_callback(
    answer: Any, is_async: bool
):
    agent = Agent(llm(history=HISTORY), before_run=make_hook(answer, is_async))
    before = calls()
    result = await agent.prompt("x")
    assert result["success"] is False
    assert result["status"]["code"] == "error"
    assert result["errorInfo"]["kind"] == "callback"
    assert calls() == before
    assert agent.get_history() == HISTORY
    assert agent.state["status"] == "error"


async def test_hook_timeout_fails_the_run_as_callback():
    async def slow(ctx: BeforeRunContext) -> None:
        await asyncio.sleep(30)

    agent = Agent(llm(hooks={"timeoutMs": 50}), before_run=slow)
    before = calls()
    result = await asyncio.wait_for(agent.run("x"), timeout=10)
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "callback"
    assert calls() == before


async def test_hook_timeout_in_stream_sends_error_event_with_callback_kind():
    async def slow(ctx: BeforeRunContext) -> None:
        await asyncio.sleep(30)

    agent = Agent(llm(hooks={"timeoutMs": 50}), before_run=slow)
    events = await asyncio.wait_for(collect(agent.stream("x")), timeout=10)
    assert [event["type"] for event in events] == ["error", "done"]
    assert events[0]["data"]["kind"] == "callback"
    assert events[1]["data"]["errorInfo"]["kind"] == "callback"


@pytest.mark.parametrize("method", ["run", "prompt", "stream"])
@pytest.mark.parametrize(
    ("messages", "message"),
    [
        (
            [user(text(7))],  # type: ignore[arg-type]
            "beforeRun.messages[0].content[0].text must be a string",
        ),
        (
            [{"role": "user", "content": "not blocks"}],
            "beforeRun.messages[0].content must be an array",
        ),
        ([], "beforeRun.messages must not be an empty array"),
        (None, "beforeRun.messages must be an array, got null"),
        (
            [user(tool_use("t", "n", f=print))],
            "beforeRun.messages[0].content[0].input.f is a function",
        ),
    ],
)
async def test_hook_returning_invalid_messages_fails_the_run_as_callback(
    method: str, messages: Any, message: str
):
    # The hook is a callback: its bad answer is a failed run, not an exception.
    agent = Agent(
        llm(history=HISTORY), before_run=lambda ctx: {"prompt": ctx.prompt, "messages": messages}
    )
    before = calls()
    if method == "stream":
        events = await collect(agent.stream("x"))
        assert [event["type"] for event in events] == ["error", "done"]
        assert events[0]["data"]["kind"] == "callback"
        result = events[-1]["data"]
    else:
        result = await getattr(agent, method)("x")
    assert result["success"] is False
    assert result["status"]["code"] == "error"
    assert result["errorInfo"]["kind"] == "callback"
    assert result["status"]["message"].startswith(message)
    assert calls() == before  # the backend was never called
    assert agent.get_history() == HISTORY
    assert agent.state["status"] == "error"


async def test_hook_answer_without_messages_keeps_them():
    agent = Agent(llm(), before_run=lambda ctx: {"prompt": ctx.prompt})
    assert echoed(await agent.run(STRUCTURED)) == STRUCTURED


async def test_after_run_returning_a_modified_result_is_used():
    def after(ctx: AfterRunContext) -> dict[str, Any]:
        return {**ctx.result, "output": "replaced output"}

    agent = Agent(llm(), after_run=after)
    result = await agent.run("x", run_id="run_after")
    assert result["output"] == "replaced output"
    assert result["identity"] == {"runId": "run_after"}


@sync_and_async
async def test_after_run_none_keeps_the_result_and_ctx_mutation_is_ignored(is_async: bool):
    seen: list[AfterRunContext] = []

    def body(ctx: AfterRunContext) -> None:
        seen.append(ctx)
        ctx.result["output"] = "tampered"
        ctx.result["messages"].clear()

    agent = Agent(llm(), after_run=make_hook(body, is_async))
    result = await agent.run("x", run_id="run_a")
    assert echoed(result) == [user(text("x"))]
    assert result["messages"] and result["messages"][0]["role"] == "assistant"
    [ctx] = seen
    assert ctx.agent_name == "a"
    assert ctx.run_id == "run_a"


@pytest.mark.parametrize(
    "after",
    [
        pytest.param(_raise, id="raises"),
        pytest.param(lambda ctx: "text", id="string"),
        pytest.param(lambda ctx: {"output": "partial"}, id="missing-fields"),
    ],
)
async def test_after_run_failure_fails_the_run_as_callback(after: Any):
    agent = Agent(llm(), after_run=after)
    result = await agent.prompt("x")
    assert result["success"] is False
    assert result["errorInfo"]["kind"] == "callback"
    assert agent.get_history() == []


# --------------------------------------------------------------------------
# external (process) agents: the string-only bridge


async def test_marker_process_is_spawned_for_a_string_prompt(tmp_path: Path):
    # The positive control for the "never spawned" tests below.
    marker = tmp_path / "MARKER"
    agent = Agent(marker_process(marker))
    result = await agent.run("hello")
    assert result["success"], result
    assert result["output"] == "hello"
    assert marker.exists()


@pytest.mark.parametrize(
    ("method", "value"),
    [
        pytest.param("run", [user(text("hello"))], id="run-plain-text-message"),
        pytest.param("run", [user(text("a"), image())], id="run-with-image"),
        pytest.param("stream", [user(text("hello"))], id="stream-plain-text-message"),
        pytest.param("prompt", [text("hello")], id="prompt-one-text-block"),
        pytest.param("prompt", [text("a"), image()], id="prompt-with-image"),
    ],
)
async def test_structured_input_to_process_agent_is_rejected_without_spawn(
    tmp_path: Path, method: str, value: Any
):
    marker = tmp_path / "MARKER"
    hook_calls: list[Any] = []
    agent = Agent(marker_process(marker), before_run=hook_calls.append)
    with pytest.raises(InvalidMessageError) as info:
        if method == "stream":
            agent.stream(value)
        else:
            await getattr(agent, method)(value)
    assert "accepts string prompts only" in str(info.value)
    assert info.value.path == "input"
    await asyncio.sleep(0.05)
    assert not marker.exists()
    assert hook_calls == []
    assert agent.get_history() == []
    assert agent.state["status"] == "idle"


async def test_invalid_structure_to_process_agent_is_a_guard_error(tmp_path: Path):
    marker = tmp_path / "MARKER"
    agent = Agent(marker_process(marker))
    with pytest.raises(InvalidMessageError) as info:
        await agent.run(INVALID)
    assert info.value.path == "input[0].content[0].text"
    assert not marker.exists()


@pytest.mark.parametrize("method", ["run", "prompt"])
async def test_hook_changing_messages_for_process_agent_fails_without_spawn(
    tmp_path: Path, method: str
):
    marker = tmp_path / "MARKER"
    agent = Agent(
        marker_process(marker),
        before_run=lambda ctx: {"prompt": ctx.prompt, "messages": [user(text("other"))]},
    )
    result = await getattr(agent, method)("hello")
    assert result["success"] is False
    assert result["status"]["code"] == "error"
    assert LOSSY_MESSAGES in result["output"]
    assert "beforeRun.messages cannot be forwarded without loss" in result["output"]
    assert not marker.exists()
    assert agent.get_history() == []


async def test_hook_returning_the_same_messages_for_process_agent_is_allowed(tmp_path: Path):
    marker = tmp_path / "MARKER"
    agent = Agent(
        marker_process(marker),
        before_run=lambda ctx: {"prompt": ctx.prompt, "messages": ctx.messages},
    )
    result = await agent.run("same")
    assert result["success"], result
    assert result["output"] == "same"
    assert marker.exists()


@pytest.mark.parametrize("backend", ["llm", "process"])
async def test_prompt_hook_sees_the_history_and_the_turn_for_any_backend(backend: str):
    seen: list[list[dict[str, Any]]] = []
    config = llm() if backend == "llm" else process("cat")
    agent = Agent({**config, "history": HISTORY}, before_run=lambda ctx: seen.append(ctx.messages))
    await agent.prompt("first")
    await agent.prompt("second")
    assert seen[0] == [*HISTORY, user(text("first"))]
    assert seen[1] == agent.get_history()[:-1]  # all but the reply to "second"
    assert seen[1][-1] == user(text("second")) and len(seen[1]) == len(HISTORY) + 3


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda messages: messages[-1:], id="trim-history"),
        pytest.param(lambda messages: [*messages, user(text("more"))], id="append"),
    ],
)
async def test_external_prompt_hook_changing_its_messages_fails_without_spawn(
    tmp_path: Path, change: Any
):
    marker = tmp_path / "MARKER"
    agent = Agent(
        {**marker_process(marker), "history": HISTORY},
        before_run=lambda ctx: {"prompt": ctx.prompt, "messages": change(ctx.messages)},
    )
    result = await agent.prompt("hello")
    assert result["success"] is False
    assert LOSSY_MESSAGES in result["output"]
    assert not marker.exists()
    assert agent.get_history() == HISTORY


async def test_external_prompt_hook_returning_its_messages_unchanged_runs(tmp_path: Path):
    marker = tmp_path / "MARKER"
    agent = Agent(
        {**marker_process(marker), "history": HISTORY},
        before_run=lambda ctx: {"prompt": ctx.prompt, "messages": ctx.messages},
    )
    result = await agent.prompt("hello")
    assert result["output"] == "hello"  # the process gets the turn alone
    assert marker.exists()


@sync_and_async
async def test_hook_prompt_rewrite_reaches_the_process(is_async: bool):
    agent = Agent(
        process("cat"), before_run=make_hook(lambda ctx: {"prompt": "REWRITTEN"}, is_async)
    )
    result = await agent.prompt("original")
    assert result["success"], result
    assert result["output"] == "REWRITTEN"
    assert agent.get_history() == [user(text("original")), assistant(text("REWRITTEN"))]


async def test_process_stream_yields_stdout_text_then_done():
    agent = Agent(process("cat"))
    events = await collect(agent.stream("streamed"))
    assert events[-1]["type"] == "done"
    assert "".join(e["data"] for e in events[:-1] if e["type"] == "text") == "streamed"
    assert events[-1]["data"]["output"] == "streamed"


# --------------------------------------------------------------------------
# concurrency and cancellation


async def test_concurrent_prompts_run_one_after_another_in_arrival_order():
    delays = {"first": 0.15, "second": 0.05, "third": 0.0}
    active = 0
    overlap: list[bool] = []

    async def hook(ctx: BeforeRunContext) -> None:
        nonlocal active
        active += 1
        overlap.append(active > 1)
        await asyncio.sleep(delays[ctx.prompt])
        active -= 1

    agent = Agent(llm(model="slow-echo"), before_run=hook)
    results = await asyncio.gather(
        agent.prompt("first"), agent.prompt("second"), agent.prompt("third")
    )
    assert overlap == [False, False, False]
    history = agent.get_history()
    assert [m["content"][0]["text"] for m in history[0::2]] == ["first", "second", "third"]
    assert [m["role"] for m in history] == ["user", "assistant"] * 3
    # Each turn saw every turn that arrived before it.
    assert echoed(results[0]) == [user(text("first"))]
    assert echoed(results[1]) == [*history[:2], user(text("second"))]
    assert echoed(results[2]) == [*history[:4], user(text("third"))]


async def test_abort_during_stream_returns_cancelled_with_partial_output():
    agent = Agent(llm(model="slow-echo"))
    abort = AbortSignal()
    events: list[dict[str, Any]] = []
    async for event in agent.stream("a prompt long enough to need many chunks " * 4, abort=abort):
        events.append(event)
        if event["type"] == "text" and len(events) == 2:
            abort.abort()
    done = events[-1]
    assert done["type"] == "done"
    result = done["data"]
    assert result["success"] is False
    assert result["status"]["code"] == "cancelled"
    assert result["aborted"] is True
    assert result["output"]
    assert result["output"] == "".join(e["data"] for e in events if e["type"] == "text")
    full = json.dumps(
        {"system": None, "messages": [user(text("a prompt long enough to need many chunks " * 4))]}
    )
    assert full.startswith(result["output"])
    assert len(result["output"]) < len(full)


async def test_aborted_prompt_leaves_history_unchanged():
    entered = asyncio.Event()

    async def hook(ctx: BeforeRunContext) -> None:
        entered.set()
        await asyncio.sleep(30)

    agent = Agent(llm(history=HISTORY), before_run=hook)
    abort = AbortSignal()
    task = asyncio.ensure_future(agent.prompt("never finishes", abort=abort))
    await asyncio.wait_for(entered.wait(), timeout=5)
    abort.abort()
    result = await asyncio.wait_for(task, timeout=5)
    assert result["status"]["code"] == "cancelled"
    assert result["aborted"] is True
    assert agent.get_history() == HISTORY


async def test_prompt_aborted_while_queued_is_cancelled_and_leaves_history_alone():
    release = asyncio.Event()

    async def hook(ctx: BeforeRunContext) -> None:
        if ctx.prompt == "first":
            await release.wait()

    agent = Agent(llm(), before_run=hook)
    abort = AbortSignal()
    first = asyncio.ensure_future(agent.prompt("first"))
    await asyncio.sleep(0.01)
    second = asyncio.ensure_future(agent.prompt("second", abort=abort))
    await asyncio.sleep(0.01)
    abort.abort()
    second_result = await asyncio.wait_for(second, timeout=5)
    release.set()
    first_result = await asyncio.wait_for(first, timeout=5)
    assert second_result["status"]["code"] == "cancelled"
    assert first_result["success"] is True
    assert agent.get_history() == [user(text("first")), assistant(text(first_result["output"]))]


async def test_abort_of_a_process_run_returns_cancelled(tmp_path: Path):
    agent = Agent(process("sh", "-c", "printf started; sleep 30"))
    abort = AbortSignal()
    events: list[dict[str, Any]] = []
    async with asyncio.timeout(15):
        async for event in agent.stream("x", abort=abort):
            events.append(event)
            if event["type"] == "text":
                abort.abort()
    result = events[-1]["data"]
    assert result["status"]["code"] == "cancelled"
    assert result["aborted"] is True
    assert result["output"] == "started"


# --------------------------------------------------------------------------
# OpenMultiAgent.run_agent


class FakeEvaluator:
    def __init__(self, fail: bool = False) -> None:
        self.samples: list[Any] = []
        self.fail = fail

    def submit(self, sample: Any) -> None:
        self.samples.append(sample)
        if self.fail:
            raise RuntimeError("evaluator down")


async def test_run_agent_progress_for_a_string_input():
    events: list[dict[str, Any]] = []
    oma = OpenMultiAgent(on_progress=events.append)
    result = await oma.run_agent(llm(name="solo"), "hello", run_id="run_s")
    assert [e["type"] for e in events] == ["agent_start", "agent_complete"]
    start, complete = events
    assert start == {
        "runId": "run_s",
        "type": "agent_start",
        "agent": "solo",
        "data": {"prompt": "hello"},
    }
    assert complete["runId"] == "run_s"
    assert complete["agent"] == "solo"
    assert complete["data"] == result
    assert result["identity"] == {"runId": "run_s"}


async def test_run_agent_progress_for_structured_input_is_a_copy():
    events: list[dict[str, Any]] = []
    oma = OpenMultiAgent()
    messages = copy.deepcopy(STRUCTURED)
    await oma.run_agent(llm(), messages, on_progress=events.append)
    start = events[0]
    assert start["type"] == "agent_start"
    assert start["data"] == {"messages": STRUCTURED}
    sent = start["data"]["messages"]
    assert sent is not messages
    assert sent[0] is not messages[0]
    assert sent[0]["content"] is not messages[0]["content"]
    assert sent[0]["content"][1]["source"] is not messages[0]["content"][1]["source"]


async def test_mutating_progress_payloads_does_not_reach_the_run_or_the_sample():
    def tamper(event: dict[str, Any]) -> None:
        data = event["data"]
        if event["type"] == "agent_start":
            data["messages"][0]["content"][0]["text"] = "tampered"
            data["messages"].append(user(text("injected")))
        else:
            data["output"] = "tampered"
            data["messages"].clear()
            data["status"]["code"] = "error"

    evaluator = FakeEvaluator()
    oma = OpenMultiAgent(on_progress=tamper, evaluator=evaluator)
    result = await oma.run_agent(llm(), copy.deepcopy(STRUCTURED))
    assert echoed(result) == STRUCTURED
    assert result["status"]["code"] == "ok"
    [sample] = evaluator.samples
    assert sample.input == STRUCTURED
    assert sample.output == result["output"]
    assert sample.result == result
    assert sample.result is not result


async def test_evaluator_gets_the_string_for_a_string_call():
    evaluator = FakeEvaluator()
    oma = OpenMultiAgent(evaluator=evaluator)
    result = await oma.run_agent(
        llm(name="ev"), "plain question", run_id="run_e", metadata={"k": ["v"]}
    )
    [sample] = evaluator.samples
    assert sample.input == "plain question"
    assert sample.output == result["output"]
    assert sample.run_id == "run_e"
    assert sample.agent == "ev"
    assert sample.metadata == {"k": ["v"]}


async def test_evaluator_gets_its_own_copy_of_the_messages_for_a_structured_call():
    evaluator = FakeEvaluator()
    oma = OpenMultiAgent(evaluator=evaluator)
    messages = copy.deepcopy(STRUCTURED)
    result = await oma.run_agent(llm(), messages)
    messages[0]["content"][0]["text"] = "changed after the call"
    [sample] = evaluator.samples
    assert sample.input == STRUCTURED
    assert sample.input is not messages
    assert sample.output == result["output"]


@pytest.mark.parametrize(
    ("config", "bad_input", "fragment"),
    [
        (llm(), INVALID, "input[0].content[0].text must be a string"),
        (llm(), [], "must not be an empty array"),
        (process("cat"), [user(text("hi"))], "accepts string prompts only"),
    ],
)
async def test_run_agent_invalid_input_raises_before_progress_or_evaluation(
    config: dict[str, Any], bad_input: Any, fragment: str
):
    events: list[Any] = []
    evaluator = FakeEvaluator()
    oma = OpenMultiAgent(on_progress=events.append, evaluator=evaluator)
    before = calls()
    with pytest.raises(InvalidMessageError) as info:
        await oma.run_agent(config, bad_input)
    assert fragment in str(info.value)
    assert events == []
    assert evaluator.samples == []
    assert calls() == before


async def test_run_agent_structured_input_for_process_never_spawns(tmp_path: Path):
    marker = tmp_path / "MARKER"
    events: list[Any] = []
    oma = OpenMultiAgent(on_progress=events.append)
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        await oma.run_agent(marker_process(marker), [user(text("hi"))])
    assert events == []
    assert not marker.exists()


async def test_progress_callback_exceptions_do_not_break_the_run():
    def explode(event: dict[str, Any]) -> None:
        raise RuntimeError("callback failed")

    evaluator = FakeEvaluator()
    oma = OpenMultiAgent(on_progress=explode, evaluator=evaluator)
    result = await oma.run_agent(llm(), "still runs")
    assert echoed(result) == [user(text("still runs"))]
    assert len(evaluator.samples) == 1


async def test_evaluator_exceptions_do_not_break_the_run():
    oma = OpenMultiAgent(evaluator=FakeEvaluator(fail=True))
    result = await oma.run_agent(llm(), "still runs")
    assert result["success"] is True


async def test_run_agent_call_progress_overrides_the_default_callback():
    default: list[Any] = []
    per_call: list[Any] = []
    oma = OpenMultiAgent(on_progress=default.append)
    await oma.run_agent(llm(), "x", on_progress=per_call.append)
    assert default == []
    assert [e["type"] for e in per_call] == ["agent_start", "agent_complete"]


async def test_run_agent_runs_hooks_and_reports_the_hooked_result():
    events: list[dict[str, Any]] = []
    oma = OpenMultiAgent(on_progress=events.append)
    result = await oma.run_agent(llm(), "orig", before_run=lambda ctx: {"prompt": "hooked"})
    assert echoed(result) == [user(text("hooked"))]
    assert events[0]["data"] == {"prompt": "orig"}
    assert events[-1]["data"] == result
