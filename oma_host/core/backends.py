"""The Backend protocol: what the agent asks of whatever runs a conversation.

Backends live above the core; each kind declares a :class:`BackendEntry` (flags
read before anything is built, and a factory), found through
:mod:`oma_host.core.plugins`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from oma_host.core.abort import AbortSignal
from oma_host.core.config import AgentConfig
from oma_host.core.delegation import Lineage
from oma_host.core.editor_channel import EditorChannel
from oma_host.core.events import Compaction, EmitFn
from oma_host.core.messages import LLMMessage
from oma_host.core.recorder import RunRecorder
from oma_host.core.results import AgentRunResult

if TYPE_CHECKING:
    from oma_host.core.hooks import AfterRunHook, BeforeRunHook

LLM_KIND = "llm"

# Answers a backend's permission request: an LLM agent's tool call under its
# ``permissions`` (``source: "tool"``), or an ACP agent's with ``permission:
# "ask-client"``. Receives ``{agentName, title, kind, optionKinds, ...}``,
# returns ``{approve: bool, scope?}``.
PermissionHandler = Callable[[dict[str, Any]], Awaitable[Any]]


class AgentCallbacks(TypedDict, total=False):
    """The client callbacks a door gives an agent, for one session: the
    keyword arguments an Agent (or a one-off run) takes for them. Each door
    builds one set per session (``server/callbacks.py``, the ACP door's
    ``door.py``), so the same agent runs the same way behind either."""

    before_run: BeforeRunHook
    after_run: AfterRunHook
    permission_handler: PermissionHandler
    editor: EditorChannel


@runtime_checkable
class OptionPicker(Protocol):
    """A permission handler that is shown the agent's own options and picks
    one itself, rather than answering approve or reject (the ACP door passes
    them to its editor unchanged). Backends that have options check for it."""

    async def pick_option(
        self, request: dict[str, Any], tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> str | None:
        """The ``optionId`` chosen among ``options`` (ACP wire dicts, as the
        agent sent them, with its ``toolCall``), or None: cancelled."""
        ...


class Backend(Protocol):
    """What runs a validated conversation: the LLM loop or an external bridge.

    ``messages`` is the complete effective input (for ``prompt``, the history
    and the turn); ``prompt`` is the text of its latest user message, which is
    all a backend that does not accept structured input reads."""

    async def execute(
        self, messages: list[LLMMessage], prompt: str, recorder: RunRecorder, *, streaming: bool
    ) -> AgentRunResult: ...

    async def close(self) -> None: ...


@dataclass
class SessionLink:
    """Ties a backend's own session to the host's persistent session
    (``agent/create {sessionId}``): ``known`` is the id the backend's peer
    gave its session last (an ACP ``sessionId``), None before; ``remember``
    stores a new one with the host's session (None: forget it)."""

    known: str | None
    remember: Callable[[str | None], Awaitable[None]]


@runtime_checkable
class Configurable(Protocol):
    """A backend whose live session has choices a client reads
    (``agent/state``) and changes (``agent/configure``): an ACP agent's
    ``configOptions``, ``modes`` and ``models``."""

    def choices(self) -> dict[str, Any] | None:
        """The session's choices as the agent reported them; None without a live session."""
        ...

    async def configure(self, config_id: str, value: str | bool) -> dict[str, Any]:
        """Set one choice (opening the session first if need be); the choices
        after. A failure raises :class:`~oma_host.core.errors.BackendRequestError`."""
        ...


@runtime_checkable
class Compactable(Protocol):
    """A backend that can compact a conversation on request (``agent/compact``,
    the ACP door's ``/compact``): an LLM agent's."""

    async def compact(self, messages: list[LLMMessage], recorder: RunRecorder) -> Compaction | str:
        """Compact ``messages`` now: the compaction's payload, with its mark
        in ``recorder.compaction`` and what the summary cost in
        ``recorder.usage``; or why there was nothing to compact."""
        ...


@dataclass
class FilesRestored:
    """What restoring a checkpoint did to the workspace, as absolute paths:
    files put back as they were, files removed (created since), files left
    as they are because they changed outside the agent since its last turn,
    and files that differ but that the checkpoint did not record (too large,
    or past its bounds), so could not be put back."""

    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)
    not_recorded: list[str] = field(default_factory=list)


@runtime_checkable
class Checkpointing(Protocol):
    """A backend whose history is kept here, whose turns may change files,
    and which records its workspace around them (``agent/rewind``, the ACP
    door's ``/rewind``): an LLM agent's."""

    async def checkpoint(self, label: str, *, last_turn: bool = False) -> str | None:
        """Record the workspace now (``last_turn``: as a turn just left it);
        the checkpoint's id, or None when this agent records none (its tools
        change no files, or checkpoints are off) or recording failed (logged)."""
        ...

    async def restore(self, checkpoint: str) -> FilesRestored:
        """Put the workspace back as ``checkpoint`` recorded it (StoreError
        when it cannot be read or written)."""
        ...


class Delegate(Protocol):
    """An agent a run may hand a task to (a core ``Agent``), as the LLM
    backend's ``delegate`` tool uses it (:mod:`oma_host.core.delegation`)."""

    @property
    def config(self) -> AgentConfig: ...

    def validate_run_input(
        self, value: object, path: str = "input", *, owned: bool = False
    ) -> list[LLMMessage]: ...

    async def execute(
        self,
        messages: list[LLMMessage],
        *,
        run_id: str | None = None,
        abort: AbortSignal | None = None,
        emit: EmitFn | None = None,
        lineage: Lineage | None = None,
    ) -> AgentRunResult: ...


# Finds a delegate by name when a call runs: the door's agent of that name in
# the session (None: there is none any more, e.g. it was disposed).
DelegateLookup = Callable[[str], Delegate | None]


@dataclass(frozen=True)
class BackendContext:
    """What the agent hands a factory besides the config."""

    permission_handler: PermissionHandler | None = None
    session_link: SessionLink | None = None
    editor: EditorChannel | None = None  # what the client does with files (None: the disk)
    delegates: DelegateLookup | None = None  # the agents ``config.delegates`` names
    # The shadow repository of the agent's workspace checkpoints (None: none are recorded).
    checkpoints: str | None = None


@dataclass(frozen=True)
class BackendEntry:
    """One kind of backend, as the core sees it."""

    kind: str
    build: Callable[[AgentConfig, BackendContext], Backend]
    # Takes message lists and content blocks; else string prompts only, and
    # structured input is refused before anything is built.
    accepts_structured: bool
    # Holds a conversation of its own (an ACP session), which ``reset`` ends.
    keeps_session: bool
    # Refuses, at construction, a config this backend could never run.
    check_config: Callable[[AgentConfig], None] | None = None
    # How messages name this kind, article included ("an ACP backend").
    label: str | None = None

    @property
    def described(self) -> str:
        """``label``, else ``"a <kind> backend"``."""
        return self.label or f"a {self.kind} backend"


def backend_kind(config: AgentConfig) -> str:
    """The kind ``config`` names: ``config.backend.kind``, or ``"llm"`` without a backend."""
    return config.backend.kind if config.backend is not None else LLM_KIND
