"""The exception hierarchy of oma-host, and the JSON-RPC error each maps to.

    OmaError                      base of everything the library raises on purpose
    ├── InvalidMessageError       structured input failed the shape guard or the
    │                             string-only boundary (-32602, data.type InvalidMessageError)
    ├── InvalidParamsError        any other bad parameter or config (-32602, InvalidParams)
    ├── AgentNotFoundError        unknown agentId (-32001, AgentNotFound)
    └── StoreError                the state directory cannot be used (-32603, StoreError)

Failures *while executing* a valid request are not exceptions: they come back
as an AgentRunResult with ``success: false`` (see ``oma_host.core.results``).
"""

from __future__ import annotations


class OmaError(Exception):
    """Base class of the errors oma-host raises deliberately."""

    code: int = -32603
    type_name: str = "InternalError"

    def error_data(self) -> dict[str, object]:
        """The JSON-RPC ``error.data`` object for this error."""
        return {"type": self.type_name}


class InvalidMessageError(OmaError, ValueError):
    """Structured input that failed the shape guard, could not be copied as
    plain data, or was sent to a backend that accepts string prompts only.

    ``path`` is the JSON path of the first violation, e.g.
    ``input[2].content[1].source.data``.
    """

    code = -32602
    type_name = "InvalidMessageError"

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path

    def error_data(self) -> dict[str, object]:
        return {"type": self.type_name, "path": self.path}


class InvalidParamsError(OmaError, ValueError):
    """A request parameter or agent config that is missing, mistyped or unknown."""

    code = -32602
    type_name = "InvalidParams"


class AgentNotFoundError(OmaError, LookupError):
    """An ``agentId`` the host does not know (never created, or disposed)."""

    code = -32001
    type_name = "AgentNotFound"


class StoreError(OmaError, OSError):
    """The state directory or its database cannot be opened or written."""

    code = -32603
    type_name = "StoreError"
