"""The exception hierarchy of oma-host and the JSON-RPC error each maps to.

Each error's ``code`` is an :class:`ErrorCode` carrying its ``error.data.type``
(docs/protocol.md, "Errors"). A failure while executing a valid request is not
an exception: it is a result with ``success: false`` and an ``errorInfo.kind``
among :data:`ErrorKind`. Dependency-free: the JSON-RPC door imports it to
answer ``initialize``.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Literal


class ErrorCode(enum.IntEnum):
    """The JSON-RPC error codes oma-host answers with; ``type_name`` is the
    ``error.data.type`` that goes with each."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    AGENT_NOT_FOUND = -32001
    SERVER_NOT_INITIALIZED = -32002
    PROVIDER_ERROR = -32003
    BACKEND_ERROR = -32004
    REQUEST_CANCELLED = -32800

    @property
    def type_name(self) -> str:
        """The member's name in CamelCase: ``INVALID_PARAMS`` is ``InvalidParams``."""
        return "".join(word.capitalize() for word in self.name.split("_"))


# How a provider request fails (ProviderError.kind, and then errorInfo.kind).
ProviderErrorKind = Literal[
    "provider",  # the provider answered with an error, or refused the request
    "auth",  # no key, or a key the provider refused
    "connection",
    "timeout",
    "stream",  # the response was cut off
    "malformed",  # a reply of the wrong shape
    "unsupported",  # the provider has no such endpoint (models/list)
    "unsupported_block",  # a content block the provider's wire cannot carry
    "context_too_long",  # the request is longer than the model's context window
]

# Where a failed run failed: ``errorInfo.kind`` of its AgentRunResult, and
# ``data.kind`` of a BackendError.
ErrorKind = Literal[
    ProviderErrorKind,
    "internal",  # a bug; the message says where
    "callback",  # a hook or another request to the client failed
    "input",  # nothing to send (an empty prompt)
    "output_schema",  # the reply does not match outputSchema
    "output_limit",  # an external agent wrote more than backend.maxOutputBytes
    "mcp",  # an MCP server failed to start or died
    "store",  # the state directory could not be written
    "disposed",  # the agent was disposed before the run started
    "plan",  # a team's coordinator gave no usable plan
    "spawn",  # a backend's command could not start
    "process",  # a backend's process failed or went away
    "protocol",  # an ACP agent broke the protocol
    "acp",  # an ACP agent answered with an error
    "config",  # an ACP agent refused a backend.config choice
    "refusal",  # an ACP agent refused the prompt
    "max_tokens",  # budget_exhausted: the token budget
    "max_turn_requests",  # budget_exhausted: an ACP agent's own request limit
    "budget",  # budget_exhausted: the cost budget (maxCostBudget)
    "loop",  # the model kept making the same tool call (loopDetection)
    "executor",  # a team's executor could not run the task (a Ray worker or node lost)
    "delegation",  # the host was started beneath a run with no delegation depth left
]


class OmaError(Exception):
    """Base class of the errors oma-host raises deliberately."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL_ERROR
    # ``error.data.type`` when it is not the code's own name.
    type_name: ClassVar[str | None] = None

    def error_data(self) -> dict[str, object]:
        """The JSON-RPC ``error.data`` object for this error."""
        return {"type": self.type_name or self.code.type_name}


class InvalidMessageError(OmaError, ValueError):
    """Structured input that failed the shape guard, could not be copied as
    plain data, or was sent to a backend that accepts string prompts only.

    ``path`` is the JSON path of the first violation, e.g.
    ``input[2].content[1].source.data``.
    """

    code = ErrorCode.INVALID_PARAMS
    type_name = "InvalidMessageError"

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path

    def error_data(self) -> dict[str, object]:
        return {**super().error_data(), "path": self.path}


class InvalidParamsError(OmaError, ValueError):
    """A request parameter or agent config that is missing, mistyped or unknown."""

    code = ErrorCode.INVALID_PARAMS


class AgentNotFoundError(OmaError, LookupError):
    """An ``agentId`` the host does not know (never created, or disposed)."""

    code = ErrorCode.AGENT_NOT_FOUND


class StoreError(OmaError, OSError):
    """The state directory or its database cannot be opened or written."""

    code = ErrorCode.INTERNAL_ERROR
    type_name = "StoreError"


class BackendRequestError(OmaError):
    """A request a client made of an agent's backend (not a run) that failed:
    ``kind`` says how, as a failed run's ``errorInfo.kind`` would."""

    code = ErrorCode.BACKEND_ERROR

    def __init__(self, message: str, kind: ErrorKind) -> None:
        super().__init__(message)
        self.kind = kind

    def error_data(self) -> dict[str, object]:
        return {**super().error_data(), "kind": self.kind}
