"""What the host sends (method results, requests to the client, notifications) as TypedDicts.

Handlers return these, so mypy checks every answer, and ``oma-host schema``
documents them.
"""

from __future__ import annotations

from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,  # pydantic needs it before 3.12
)

from typing_extensions import TypedDict

from oma_host.core.agent import AgentStatus
from oma_host.core.config import SandboxMode
from oma_host.core.events import Compaction, PermissionScope, RunEvent
from oma_host.core.messages import LLMMessage, schema_ref
from oma_host.core.results import AgentRunResult, Cost, ErrorInfo, TokenUsage
from oma_host.server.registry import ClientMethod, Notification

# -- method results ---------------------------------------------------------------


class CreateResult(TypedDict):
    agentId: str


class HistoryResult(TypedDict):
    messages: list[LLMMessage]


class AgentChoicesResult(TypedDict):
    """An ACP agent's session choices, in the agent's own wire form (ACP
    ``SessionConfigOption``, ``SessionModeState``, ``SessionModelState``)."""

    configOptions: NotRequired[list[dict[str, Any]]]
    modes: NotRequired[dict[str, Any]]
    models: NotRequired[dict[str, Any]]


class SandboxState(TypedDict):
    """The OS sandbox an LLM agent's ``shell`` commands run in (``mode``,
    never ``off``): ``confinedBy``, the tool that confines them on this
    machine, or ``unavailable``, why none can (the commands then ask and run
    unconfined, as without a sandbox)."""

    mode: SandboxMode
    confinedBy: NotRequired[Literal["bwrap", "landlock"]]
    unavailable: NotRequired[str]


class AgentStateResult(AgentChoicesResult):
    status: AgentStatus
    tokenUsage: TokenUsage
    cost: NotRequired[Cost]  # every run's since creation or reset, when prices are known
    sandbox: NotRequired[SandboxState]  # an LLM agent's, when its commands have one


class CompactResult(TypedDict):
    """``compacted``: whether the history was compacted; then ``compaction``
    says how (the ``compaction`` event's data), else ``reason`` says why
    not. ``tokenUsage`` (and ``cost``, when prices are known) is what the
    summary cost."""

    compacted: bool
    compaction: NotRequired[Compaction]
    reason: NotRequired[str]
    tokenUsage: TokenUsage
    cost: NotRequired[Cost]


class RewoundFiles(TypedDict):
    """What restoring the workspace did, as absolute paths: ``restored``,
    files put back as they were; ``removed``, files created since;
    ``leftAlone``, files changed outside the agent since its last turn,
    left as they are; ``notRecorded``, files that differ but that the
    checkpoint left out (too large, or past its bounds)."""

    restored: list[str]
    removed: list[str]
    leftAlone: list[str]
    notRecorded: list[str]


class RewindResult(TypedDict):
    """``keptTurns`` and ``removedTurns``: the turns kept and cut;
    ``messages``: the messages the history holds now; ``files``: what
    restoring the workspace did (with ``restoreFiles`` only)."""

    keptTurns: int
    removedTurns: int
    messages: int
    files: NotRequired[RewoundFiles]


class AgentListEntry(TypedDict):
    agentId: str
    name: str
    backend: NotRequired[str]


class AgentListResult(TypedDict):
    agents: list[AgentListEntry]


class TaskOutcome(TypedDict):
    id: str
    title: str
    assignee: str
    status: Literal["completed", "failed", "skipped"]
    result: NotRequired[AgentRunResult]
    reason: NotRequired[str]


class PlannedTask(TypedDict):
    id: str
    title: str
    assignee: str
    dependsOn: list[str]


class TeamResult(TypedDict):
    success: bool
    output: str
    tasks: list[TaskOutcome]
    tokenUsage: TokenUsage
    identity: dict[Literal["runId"], str]
    plan: NotRequired[list[PlannedTask]]
    errorInfo: NotRequired[ErrorInfo]


class EvaluationStats(TypedDict):
    sampled: int
    enqueued: int
    completed: int
    dropped: int
    failed: int
    storeFailed: int


class FlushResult(EvaluationStats):
    settled: bool


class EvaluationRecord(TypedDict):
    id: int
    runId: str
    agent: str
    scorer: str
    score: float | None
    reason: str | None
    input: str | None
    output: str | None
    createdAt: float
    metadata: dict[str, Any]


class RecordsResult(TypedDict):
    records: list[EvaluationRecord]


# -- requests to the client, and the answers they expect ---------------------------


class BeforeRunParams(TypedDict):
    """Sent after validation and before the backend runs, when the config has
    ``hooks.beforeRun``: ``messages`` is the complete effective input, ``prompt``
    the text of the latest user message, ``agent`` the config without hooks or
    secrets. Answer ``null`` to change nothing."""

    agentName: str
    runId: str
    prompt: str
    messages: list[LLMMessage]
    agent: dict[str, Any]


class BeforeRunAnswer(TypedDict):
    prompt: str
    messages: NotRequired[list[LLMMessage]]


class AfterRunParams(TypedDict):
    """Sent when a run finishes (not when it was cancelled), when the config has
    ``hooks.afterRun``; the answer replaces the result (``null``: unchanged)."""

    agentName: str
    runId: str
    result: AgentRunResult


class PermissionTool(TypedDict):
    """The tool call a permission rule asks about; ``target`` is its main
    argument (path or command)."""

    name: str
    input: dict[str, Any]
    target: NotRequired[str]


class PermissionParams(TypedDict):
    """Asks to use a tool: an ACP agent with ``permission: "ask-client"``
    (``source: "acp"``), or an LLM agent's tool call whose permission rule
    says ``ask`` (``source: "tool"``, with ``tool``)."""

    agentName: str
    runId: NotRequired[str]
    title: str
    kind: str | None
    optionKinds: list[str]
    source: NotRequired[Literal["acp", "tool"]]
    tool: NotRequired[PermissionTool]


class PermissionAnswer(TypedDict):
    """``scope: "session"`` (Always this session) allows the same tool under
    the same rule for the rest of the agent's life (a path: that file only;
    a command line: that line only; a protected place: never kept);
    missing means ``once``."""

    approve: bool
    scope: NotRequired[PermissionScope]


class ApplyEditParams(TypedDict):
    """LSP's ``workspace/applyEdit``: an LLM agent's ``file_write`` or
    ``file_edit``, sent only to a client that declared
    ``capabilities.workspace.applyEdit``; ``edit`` is a WorkspaceEdit with
    ``documentChanges`` (a CreateFile for a new file, then one TextDocumentEdit)."""

    label: str
    edit: dict[str, Any]


class ApplyEditAnswer(TypedDict):
    applied: bool
    failureReason: NotRequired[str]


class ScoreParams(TypedDict):
    """A client scorer's turn in online evaluation; ``input`` and ``output`` follow
    ``storePayloads``."""

    scorer: str
    runId: str
    input: str
    output: str


class ScoreAnswer(TypedDict):
    score: float
    reason: NotRequired[str]


# method -> (params, answer); None: the client may answer null (no change)
CLIENT_REQUESTS: dict[ClientMethod, tuple[Any, Any]] = {
    ClientMethod.BEFORE_RUN: (BeforeRunParams, BeforeRunAnswer | None),
    ClientMethod.AFTER_RUN: (AfterRunParams, AgentRunResult | None),
    ClientMethod.REQUEST_PERMISSION: (PermissionParams, PermissionAnswer),
    ClientMethod.APPLY_EDIT: (ApplyEditParams, ApplyEditAnswer),
    ClientMethod.EVALUATION_SCORE: (ScoreParams, ScoreAnswer),
}


# -- notifications ------------------------------------------------------------------


class WorkDoneBegin(TypedDict):
    kind: Literal["begin"]
    title: str


class WorkDoneReport(TypedDict):
    kind: Literal["report"]
    message: str


class WorkDoneEnd(TypedDict):
    kind: Literal["end"]
    message: str


class ProgressParams(TypedDict):
    """A stream event for ``partialResultToken``, or LSP work-done progress
    for ``workDoneToken``."""

    token: int | str
    value: (
        Annotated[RunEvent, schema_ref("RunEvent")] | WorkDoneBegin | WorkDoneReport | WorkDoneEnd
    )


class OmaProgressParams(TypedDict):
    """Progress of ``oma/runAgent``, ``oma/runTasks`` and ``oma/runTeam`` with
    ``progress: true``."""

    runId: str
    type: Literal[
        "agent_start",
        "agent_complete",
        "budget_exceeded",
        "task_start",
        "task_complete",
        "task_skipped",
        "plan",
    ]
    agent: str | None
    data: Any


NOTIFICATIONS: dict[Notification, Any] = {
    Notification.PROGRESS: ProgressParams,
    Notification.OMA_PROGRESS: OmaProgressParams,
}
