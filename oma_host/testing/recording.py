"""The in-process test adapter (``provider: "test"``), for tests and demos only.

It records what it received and answers deterministically (models ``echo``,
``slow-echo``, ``fail``), so a client across the wire can see what the backend
was given.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from oma_host.core.guard import clone
from oma_host.core.messages import LLMMessage
from oma_host.core.results import TokenUsage
from oma_host.providers.base import ChatOptions, LLMResponse, ProviderError, ProviderEvent

_SLOW_DELAY_S = 0.05


@dataclass
class RecordedCall:
    messages: list[LLMMessage]
    options: ChatOptions
    streaming: bool


@dataclass
class RecordingAdapter:
    """Records every call; see the module docstring for the models it knows."""

    name: str = "test"
    calls: list[RecordedCall] = field(default_factory=list)
    chunk_size: int = 16

    def _reply(self, messages: list[LLMMessage], options: ChatOptions, streaming: bool) -> str:
        self.calls.append(RecordedCall(clone(messages), options, streaming))
        if options.model == "fail":
            raise ProviderError("test adapter: model 'fail' always fails", status_code=400)
        if options.model not in ("echo", "slow-echo"):
            raise ProviderError(
                f"test adapter: unknown model {options.model!r} (use echo, slow-echo or fail)",
                status_code=404,
            )
        return json.dumps({"system": options.system_prompt, "messages": messages})

    @staticmethod
    def _response(request_text: str, reply: str) -> LLMResponse:
        usage: TokenUsage = {
            "input_tokens": len(request_text) // 4,
            "output_tokens": len(reply) // 4,
        }
        return LLMResponse(content=[{"type": "text", "text": reply}], usage=usage)

    async def chat(self, messages: list[LLMMessage], options: ChatOptions) -> LLMResponse:
        reply = self._reply(messages, options, streaming=False)
        if options.model == "slow-echo":
            # As long as streaming the same reply would take.
            await asyncio.sleep(_SLOW_DELAY_S * -(-len(reply) // self.chunk_size))
        return self._response(json.dumps(messages), reply)

    async def stream(
        self, messages: list[LLMMessage], options: ChatOptions
    ) -> AsyncIterator[ProviderEvent]:
        reply = self._reply(messages, options, streaming=True)
        delay = _SLOW_DELAY_S if options.model == "slow-echo" else 0.0
        for start in range(0, len(reply), self.chunk_size):
            if delay:
                await asyncio.sleep(delay)
            yield {"type": "text", "data": reply[start : start + self.chunk_size]}
        yield {"type": "done", "data": self._response(json.dumps(messages), reply)}


_shared: RecordingAdapter | None = None


def shared_recording_adapter(config: object = None) -> RecordingAdapter:
    """The host-wide instance, so in-process tests can read ``calls``."""
    global _shared
    if _shared is None:
        _shared = RecordingAdapter()
    return _shared
