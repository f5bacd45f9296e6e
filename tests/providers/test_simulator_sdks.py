"""The provider simulator checked against the vendors' official SDKs
(``anthropic``, ``openai``; test dependencies only), so the simulator the
host is tested against is known to speak each wire as the vendor does: the
SDK clients, pointed at the simulator's base URL, parse its answers, stream
them with their accumulating helpers, list its models, and turn its error
answers into the SDK's own exception classes. Every answer is also validated
strictly against the SDK's pydantic models (the clients themselves construct
without validating)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import Message, RawMessageStreamEvent
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from oma_host.testing.simulator import Fault, Reply, Simulator, too_long_fault
from tests.builders import tool_use

TOOL = tool_use("call_9", "lookup", q="pipes", n=2)
THOUGHT = {"type": "reasoning", "text": "Think about pipes first.", "signature": "sig-abc"}
USAGE = {"input_tokens": 21, "output_tokens": 13, "cache_read_input_tokens": 100}
USAGE_PLAIN = {"input_tokens": 21, "output_tokens": 13}


def _reply(**options: Any) -> Reply:
    content = [THOUGHT, {"type": "text", "text": "Pipes carry water."}, TOOL]
    return Reply(content=content, chunk_size=5, **options)


@pytest.fixture
def anthropic_client(sim: Simulator) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=sim.base_url, api_key="sk-ant-test", max_retries=0)


@pytest.fixture
def openai_client(sim: Simulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=sim.base_url + "/v1", api_key="sk-test", max_retries=0)


# -- Anthropic Messages -------------------------------------------------------------

_ANTHROPIC_ASK: dict[str, Any] = {
    "model": "claude-sim",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "pipes?"}],
}


def test_anthropic_sdk_parses_a_message(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    sim.script(_reply(usage=USAGE_PLAIN))
    raw = anthropic_client.messages.with_raw_response.create(**_ANTHROPIC_ASK)
    Message.model_validate(raw.http_response.json(), strict=False)
    message = raw.parse()
    thinking, said, call = message.content
    assert thinking.type == "thinking" and thinking.thinking == THOUGHT["text"]
    assert thinking.signature == "sig-abc"
    assert said.type == "text" and said.text == "Pipes carry water."
    assert call.type == "tool_use" and call.id == "call_9" and call.input == TOOL["input"]
    assert message.stop_reason == "tool_use" and message.model == "claude-sim"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (21, 13)


def test_anthropic_sdk_streams_a_message(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    # Told to, it names another model than the one asked, as an alias's answer does.
    sim.script(_reply(usage=USAGE_PLAIN, model="claude-sim-20250514"))
    with anthropic_client.messages.stream(**_ANTHROPIC_ASK) as stream:
        deltas = []
        for event in stream:
            if event.type == "text":
                deltas.append(event.text)
        final = stream.get_final_message()
    assert "".join(deltas) == "Pipes carry water." and len(deltas) > 1
    thinking, said, call = final.content
    assert thinking.type == "thinking" and thinking.thinking == THOUGHT["text"]
    assert thinking.signature == "sig-abc"
    assert said.type == "text" and said.text == "Pipes carry water."
    assert call.type == "tool_use" and call.input == TOOL["input"]
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 13
    assert final.model == "claude-sim-20250514"


def test_anthropic_sdk_lists_the_models(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    sim.models = ["claude-a", "claude-b"]
    page = anthropic_client.models.list()
    assert [model.id for model in page.data] == ["claude-a", "claude-b"]
    assert page.data[0].display_name == "Claude A" and page.has_more is False


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, anthropic.BadRequestError),
        (401, anthropic.AuthenticationError),
        (403, anthropic.PermissionDeniedError),
        (404, anthropic.NotFoundError),
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
def test_anthropic_sdk_raises_its_exception_for_each_fault(
    sim: Simulator, anthropic_client: anthropic.Anthropic, status: int, error: type[Exception]
) -> None:
    sim.script(Fault(status, "simulated trouble", retry_after=7 if status == 429 else None))
    with pytest.raises(error) as caught:
        anthropic_client.messages.create(**_ANTHROPIC_ASK)
    assert isinstance(caught.value, anthropic.APIStatusError)
    assert caught.value.status_code == status
    assert "simulated trouble" in caught.value.message
    body = caught.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "7"
        assert body["error"]["type"] == "rate_limit_error"


def test_anthropic_sdk_reads_the_prompt_too_long_answer(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    sim.script(too_long_fault("anthropic", tokens=210_000, limit=200_000))
    with pytest.raises(anthropic.BadRequestError) as caught:
        anthropic_client.messages.create(**_ANTHROPIC_ASK)
    body = caught.value.body
    assert isinstance(body, dict) and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"] == "prompt is too long: 210000 tokens > 200000 maximum"


def test_a_context_limit_refuses_longer_requests_and_counts_the_shorter(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    sim.count_tokens = lambda request: len(json.dumps(request.body["messages"])) // 4
    sim.context_limit = 50
    sim.script(Reply.text("short enough"))
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        anthropic_client.messages.create(
            **{**_ANTHROPIC_ASK, "messages": [{"role": "user", "content": "x" * 400}]}
        )
    message = anthropic_client.messages.create(**_ANTHROPIC_ASK)  # the queue was left alone
    assert message.content[0].type == "text" and message.content[0].text == "short enough"
    assert message.usage.input_tokens == len(json.dumps(_ANTHROPIC_ASK["messages"])) // 4


def test_anthropic_sdk_raises_its_exception_for_an_error_inside_a_stream(
    sim: Simulator, anthropic_client: anthropic.Anthropic
) -> None:
    busy = Fault(529, "Overloaded")
    sim.script(Reply.text("never whole", stream_error=busy, stream_error_after=3))
    seen: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        anthropic_client.messages.stream(**_ANTHROPIC_ASK) as stream,
    ):
        seen.extend(event.type for event in stream)
    assert seen[0] == "message_start"  # the events before the error came through
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["error"] == {"type": "overloaded_error", "message": "Overloaded"}


# -- OpenAI Chat Completions -----------------------------------------------------------

_CHAT_ASK: dict[str, Any] = {
    "model": "gpt-sim",
    "messages": [{"role": "user", "content": "pipes?"}],
}


def _chat_reply(**options: Any) -> Reply:
    return Reply(
        content=[{"type": "text", "text": "Pipes carry water."}, TOOL], chunk_size=5, **options
    )


def test_openai_sdk_parses_a_chat_completion(sim: Simulator, openai_client: openai.OpenAI) -> None:
    sim.script(_chat_reply(usage=USAGE))
    raw = openai_client.chat.completions.with_raw_response.create(**_CHAT_ASK)
    ChatCompletion.model_validate(raw.http_response.json())
    completion = raw.parse()
    choice = completion.choices[0]
    assert choice.message.content == "Pipes carry water." and choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.type == "function" and call.id == "call_9" and call.function.name == "lookup"
    assert call.function.arguments == '{"q": "pipes", "n": 2}'
    usage = completion.usage
    assert usage is not None and usage.prompt_tokens == 121 and usage.completion_tokens == 13
    assert usage.prompt_tokens_details is not None
    assert usage.prompt_tokens_details.cached_tokens == 100


def test_openai_sdk_streams_a_chat_completion(sim: Simulator, openai_client: openai.OpenAI) -> None:
    sim.script(_chat_reply(usage=USAGE_PLAIN, model="gpt-sim-2024-08-06"))
    with openai_client.chat.completions.stream(
        **_CHAT_ASK, stream_options={"include_usage": True}
    ) as stream:
        deltas = []
        for event in stream:
            if event.type == "chunk":
                assert event.chunk.model == "gpt-sim-2024-08-06"
            if event.type == "content.delta":
                deltas.append(event.delta)
        final = stream.get_final_completion()
    assert "".join(deltas) == "Pipes carry water." and len(deltas) > 1
    message = final.choices[0].message
    assert message.content == "Pipes carry water."
    [call] = message.tool_calls or []
    assert call.id == "call_9" and call.function.arguments == '{"q": "pipes", "n": 2}'
    assert final.usage is not None and final.usage.total_tokens == 34
    assert final.model == "gpt-sim-2024-08-06"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (409, openai.ConflictError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_sdk_raises_its_exception_for_each_fault(
    sim: Simulator, openai_client: openai.OpenAI, status: int, error: type[Exception], api: str
) -> None:
    sim.script(Fault(status, "simulated trouble", retry_after=7 if status == 429 else None))
    with pytest.raises(error) as caught:
        if api == "chat":
            openai_client.chat.completions.create(**_CHAT_ASK)
        else:
            openai_client.responses.create(model="gpt-sim", input="pipes?")
    assert isinstance(caught.value, openai.APIStatusError)
    assert caught.value.status_code == status
    assert "simulated trouble" in caught.value.message
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "7"
        assert caught.value.type == "rate_limit_error"


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_openai_sdk_reads_the_context_length_exceeded_answer(
    sim: Simulator, openai_client: openai.OpenAI, api: str
) -> None:
    sim.script(too_long_fault("openai" if api == "chat" else "openai-responses"))
    with pytest.raises(openai.BadRequestError) as caught:
        if api == "chat":
            openai_client.chat.completions.create(**_CHAT_ASK)
        else:
            openai_client.responses.create(model="gpt-sim", input="pipes?")
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.type == "invalid_request_error"
    assert caught.value.param == ("messages" if api == "chat" else "input")


def test_openai_sdk_lists_the_models_of_openai_and_azure(sim: Simulator) -> None:
    sim.models = ["gpt-a", "gpt-b"]
    for base in ("/v1", "/openai/v1"):  # OpenAI, and Azure's v1 endpoint
        client = openai.OpenAI(base_url=sim.base_url + base, api_key="k", max_retries=0)
        models = list(client.models.list())
        assert [model.id for model in models] == ["gpt-a", "gpt-b"]
        assert models[0].object == "model" and models[0].owned_by == "simulator"
    assert [r.path for r in sim.requests] == ["/v1/models", "/openai/v1/models"]


# -- OpenAI Responses (OpenAI and Azure's v1 endpoint) ---------------------------------


@pytest.mark.parametrize("base", ["/v1", "/openai/v1"])
def test_openai_sdk_parses_a_response(sim: Simulator, base: str) -> None:
    client = openai.OpenAI(base_url=sim.base_url + base, api_key="k", max_retries=0)
    sim.script(_reply(usage={**USAGE, "reasoning_tokens": 8}))
    raw = client.responses.with_raw_response.create(model="gpt-sim", input="pipes?")
    Response.model_validate(raw.http_response.json())
    response = raw.parse()
    assert response.output_text == "Pipes carry water."
    reasoning, message, call = response.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == THOUGHT["text"]
    assert reasoning.encrypted_content == f"enc:{THOUGHT['text']}"
    assert message.type == "message" and message.status == "completed"
    assert call.type == "function_call" and call.call_id == "call_9"
    assert call.name == "lookup" and call.arguments == '{"q": "pipes", "n": 2}'
    usage = response.usage
    assert usage is not None and usage.input_tokens == 121 and usage.output_tokens == 13
    assert usage.input_tokens_details.cached_tokens == 100
    assert usage.output_tokens_details.reasoning_tokens == 8
    assert response.status == "completed"
    assert sim.requests[0].path == f"{base}/responses"


def test_openai_sdk_streams_a_response(sim: Simulator, openai_client: openai.OpenAI) -> None:
    sim.script(_reply(usage={**USAGE, "reasoning_tokens": 8}, model="gpt-sim-2025-04-14"))
    kinds: list[str] = []
    text: list[str] = []
    summary: list[str] = []
    arguments: list[str] = []
    with openai_client.responses.stream(model="gpt-sim", input="pipes?") as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.reasoning_summary_text.delta":
                summary.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                arguments.append(event.delta)
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "".join(text) == "Pipes carry water." and len(text) > 1
    assert "".join(summary) == THOUGHT["text"]
    assert "".join(arguments) == '{"q": "pipes", "n": 2}'
    assert final.output_text == "Pipes carry water."
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]
    assert final.usage is not None and final.usage.input_tokens_details.cached_tokens == 100
    assert final.model == "gpt-sim-2025-04-14"


def test_openai_sdk_reads_an_incomplete_response(
    sim: Simulator, openai_client: openai.OpenAI
) -> None:
    sim.script(Reply.text("cut short", stop_reason="max_tokens"))
    response = openai_client.responses.create(model="gpt-sim", input="pipes?")
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"


# -- every streamed event, validated against the SDK's models ----------------------

_STREAMS: dict[str, tuple[str, dict[str, Any], Any]] = {
    "anthropic": (
        "/v1/messages",
        {**_ANTHROPIC_ASK, "stream": True},
        TypeAdapter(RawMessageStreamEvent),
    ),
    "chat": (
        "/v1/chat/completions",
        {**_CHAT_ASK, "stream": True, "stream_options": {"include_usage": True}},
        TypeAdapter(ChatCompletionChunk),
    ),
    "responses": (
        "/v1/responses",
        {"model": "gpt-sim", "input": "pipes?", "stream": True},
        TypeAdapter(ResponseStreamEvent),
    ),
}


@pytest.mark.parametrize("wire", sorted(_STREAMS))
def test_every_streamed_event_validates_against_the_sdk_models(sim: Simulator, wire: str) -> None:
    path, body, model = _STREAMS[wire]
    reply = _reply(usage=USAGE) if wire != "chat" else _chat_reply(usage=USAGE)
    sim.script(reply)
    with httpx.stream("POST", sim.base_url + path, json=body, timeout=10) as response:
        lines = list(response.iter_lines())
    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert data
    if wire == "chat":
        assert data[-1] == "[DONE]"
    events = [json.loads(item) for item in data if item != "[DONE]"]
    for event in events:
        if event.get("type") != "ping":  # Anthropic's keep-alive, which the SDK skips unparsed
            model.validate_python(event)
    if wire != "chat":  # the SSE event name is the data's type
        names = [line.removeprefix("event: ") for line in lines if line.startswith("event: ")]
        assert names == [event["type"] for event in events]
