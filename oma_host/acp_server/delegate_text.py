"""A delegate's text, gathered into pieces of its ``delegate`` tool call's running output.

Pieces go at most every :data:`UPDATE_INTERVAL_S`, so a long answer does not
send an update per token. The delegate's other events are not shown: ACP has no
nested tool calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from oma_host.core.events import Delegated

UPDATE_INTERVAL_S = 0.1


@dataclass
class _Call:
    parts: list[str] = field(default_factory=list)
    sent_at: float = float("-inf")
    timer: asyncio.TimerHandle | None = None


class DelegateText:
    """One turn's delegations in flight, by tool call id; ``send(call_id,
    text)`` hands on the text gathered since the last piece."""

    def __init__(self, send: Callable[[str, str], None]) -> None:
        self._send = send
        self._calls: dict[str, _Call] = {}

    def add(self, data: Delegated) -> None:
        """A delegate's event: its text joins the call's next piece."""
        event = data["event"]
        if event["type"] != "text" or not event["data"]:
            return
        call_id = data["toolUseId"]
        call = self._calls.setdefault(call_id, _Call())
        call.parts.append(event["data"])
        if call.timer is not None:
            return  # a piece is due; it will carry this too
        wait = call.sent_at + UPDATE_INTERVAL_S - time.monotonic()
        if wait <= 0:
            self._flush(call_id)
        else:
            call.timer = asyncio.get_running_loop().call_later(wait, self._flush, call_id)

    def end(self, call_id: str) -> None:
        """The call's result is out: nothing more of its text is sent."""
        call = self._calls.pop(call_id, None)
        if call is not None and call.timer is not None:
            call.timer.cancel()

    def close(self) -> None:
        """The turn is over: pieces still due are dropped."""
        for call_id in list(self._calls):
            self.end(call_id)

    def _flush(self, call_id: str) -> None:
        call = self._calls.get(call_id)
        if call is None:
            return
        call.timer = None
        call.sent_at = time.monotonic()
        text = "".join(call.parts)
        call.parts = []
        self._send(call_id, text)
