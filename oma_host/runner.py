"""The LLM agent loop: send the conversation to the provider adapter, stream
what comes back into the run's recorder, and turn provider faults into failed
results. (Tool execution, budgets and structured output build on this loop.)
"""

from __future__ import annotations

from oma_host.config import AgentConfig
from oma_host.messages import LLMMessage
from oma_host.providers import get_adapter
from oma_host.providers.base import ChatOptions, LLMResponse, ProviderError
from oma_host.redact import Redactor
from oma_host.results import AgentRunResult, RunRecorder


class LLMBackend:
    """Runs an agent that has no ``backend`` through its provider adapter."""

    external = False

    def __init__(self, config: AgentConfig) -> None:
        self._config = config
        self._adapter = get_adapter(config.provider)
        self._options = ChatOptions.from_config(config)
        self._redactor = Redactor.for_config(config)

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult:
        del prompt  # an LLM gets the complete messages
        try:
            if streaming:
                response = await self._stream(messages, recorder)
            else:
                response = await self._adapter.chat(messages, self._options)
                for block in response.content:
                    if block.get("type") == "text":
                        recorder.text_parts.append(block["text"])
        except ProviderError as error:
            message = self._redactor.redact(str(error))
            if error.status_code is not None:
                message = f"{message} (HTTP {error.status_code})"
            return recorder.result("error", message, output=message, error_kind=error.kind)
        recorder.messages.append({"role": "assistant", "content": response.content})
        recorder.add_usage(response.usage["input_tokens"], response.usage["output_tokens"])
        return recorder.result()

    async def _stream(self, messages: list[LLMMessage], recorder: RunRecorder) -> LLMResponse:
        response: LLMResponse | None = None
        async for event in self._adapter.stream(messages, self._options):
            if event["type"] == "done":
                response = event["data"]
            elif event["type"] == "text":
                recorder.text(event["data"])
            else:
                recorder.event(event["type"], event["data"])
        if response is None:
            raise ProviderError("the provider stream ended without a final message")
        return response

    async def close(self) -> None:
        """Nothing to release: the HTTP client is shared by the host."""
