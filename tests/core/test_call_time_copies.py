"""Copies are taken when a method is called, not when its result is awaited.

The reference test does exactly ``run = agent.run(x); mutate(x); await run``:
whatever the caller changes after the call (the arrays, a block, an image
source, a tool input) must not reach that run, the history or the evaluator;
and invalid input raises at the call."""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from oma_host import Agent, InvalidMessageError, OpenMultiAgent
from tests.builders import assistant, image, text, tool_result, tool_use, user

ECHO = {"name": "echo", "provider": "test", "model": "echo"}


def caller_history() -> list[dict[str, Any]]:
    call = tool_use("tu_1", "lookup", q={"terms": []})
    return [
        user(text("Earlier question")),
        assistant(text("Let me look."), call),
        user(tool_result("found", "tu_1"), text("What is in this image?"), image("aW1hZ2U=")),
    ]


def mutate(messages: list[dict[str, Any]]) -> None:
    """Every kind of change a caller can make to what it passed."""
    messages[2]["content"][1]["text"] = "caller mutation"  # a block
    messages[2]["content"][2]["source"]["data"] = "bXV0YXRlZA=="  # an image source
    messages[1]["content"][1]["input"]["q"]["terms"].append("b")  # a tool input
    messages[0]["content"].append(text("added"))  # a content array
    messages.pop(0)  # the message array


def received(result: dict[str, Any]) -> list[dict[str, Any]]:
    """What the echo model was sent, read back from its reply."""
    assert result["success"], result
    messages: list[dict[str, Any]] = json.loads(result["output"])["messages"]
    return messages


def _start(method: str, value: Any) -> Awaitable[Any]:
    """Call ``method`` with ``value`` and return what is left to await."""
    if method == "run_agent":
        return OpenMultiAgent().run_agent(ECHO, value)
    agent = Agent(ECHO)
    if method == "stream":
        stream = agent.stream(value)

        async def drain() -> dict[str, Any]:
            events = [event async for event in stream]
            done: dict[str, Any] = events[-1]["data"]
            return done

        return drain()
    started: Awaitable[Any] = getattr(agent, method)(value)
    return started


@pytest.mark.parametrize("method", ["run", "stream", "run_agent"])
async def test_mutating_the_input_after_the_call_does_not_change_the_run(method: str) -> None:
    messages = caller_history()
    expected = copy.deepcopy(messages)
    run = _start(method, messages)
    mutate(messages)
    assert received(await run) == expected


async def test_prompt_copies_its_blocks_and_history_keeps_them_as_called() -> None:
    history = caller_history()
    agent = Agent({**ECHO, "history": history})
    blocks = [image("aW1hZ2U="), text("Continue."), history[1]["content"][1]]
    expected_blocks = copy.deepcopy(blocks)
    expected_history = copy.deepcopy(history)
    prompt = agent.prompt(blocks)
    blocks[0]["source"]["data"] = "bXV0YXRlZA=="
    blocks[1]["text"] = "caller mutation"
    blocks[2]["input"]["q"]["terms"].append("b")
    blocks.append(text("added"))
    mutate(history)
    result = await prompt
    turn = {"role": "user", "content": expected_blocks}
    assert received(result) == [*expected_history, turn]
    assert agent.get_history()[: len(expected_history) + 1] == [*expected_history, turn]


async def test_run_agent_evaluates_its_own_copy_of_what_was_called() -> None:
    samples: list[Any] = []

    class Collect:
        def submit(self, sample: Any) -> None:
            samples.append(sample)

    messages = caller_history()
    expected = copy.deepcopy(messages)
    run = OpenMultiAgent(evaluator=Collect()).run_agent(ECHO, messages)
    mutate(messages)
    await run
    [sample] = samples
    assert sample.input == expected


INVALID = [{"role": "user", "content": [{"type": "text", "text": 1}]}]


@pytest.mark.parametrize(
    ("call", "value"),
    [
        pytest.param(lambda value: Agent(ECHO).run(value), INVALID, id="run"),
        pytest.param(lambda value: Agent(ECHO).stream(value), INVALID, id="stream"),
        pytest.param(lambda value: Agent(ECHO).prompt(value), [{"type": "text"}], id="prompt"),
        pytest.param(
            lambda value: OpenMultiAgent().run_agent(ECHO, value), INVALID, id="run_agent"
        ),
    ],
)
def test_invalid_input_raises_at_the_call_not_at_the_await(
    call: Callable[[Any], object], value: Any
) -> None:
    # Not awaited, not iterated: the guard has already run.
    with pytest.raises(InvalidMessageError) as info:
        call(value)
    assert info.value.path.startswith("input[0]")
