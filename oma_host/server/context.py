"""What a handler is given besides its params: the request's context.

The request's abort signal, the session's typed state and the ways to talk back
while the request runs. Nothing comes from a context variable: what a handler
uses, it is handed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from oma_host.server.registry import Notification

if TYPE_CHECKING:
    from oma_host.core.abort import AbortSignal
    from oma_host.server.registry import Method
    from oma_host.server.state import SessionState, Settings


class Session(Protocol):
    """The lifecycle of the connection a request came in on (``HostSession``)."""

    @property
    def initialized(self) -> bool: ...

    def start(self, settings: Settings) -> None:
        """``initialize`` succeeded: apply its settings and start serving."""

    async def shutdown(self) -> None:
        """Cancel in-flight runs, dispose every agent, drain background work."""


@dataclass(frozen=True)
class RequestContext:
    """One request (or notification) being handled."""

    method: Method
    abort: AbortSignal
    state: SessionState
    session: Session

    def progress(self, token: int | str, value: Any) -> None:
        """``$/progress``: a stream event, or LSP work-done progress."""
        self.state.connection.notify(Notification.PROGRESS, {"token": token, "value": value})

    def oma_progress(self, event: dict[str, Any]) -> None:
        """``oma/progress``: a one-off or team run's progress event."""
        self.state.connection.notify(Notification.OMA_PROGRESS, event)

    def where(self, field: str) -> str:
        """How an error names a field of this request's params."""
        return f"{self.method}: params.{field}"
