"""``oma-host schema``: a JSON Schema (draft 2020-12) document of every
method's params and result, every notification and every server-to-client
request, generated from the pydantic models and TypedDicts the host uses, so
client authors can generate types. ``docs/protocol.schema.json`` holds the
current output; a test regenerates it and fails when the two differ.

The wire types that the host checks by hand (team params, hook answers) are
described here as TypedDicts next to the functions that check them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import (
    Any,
    Literal,
    NotRequired,  # pydantic needs it before 3.12
)

from pydantic import BaseModel, TypeAdapter
from typing_extensions import TypedDict

from oma_host import __version__
from oma_host.core.config import AgentConfig, ModelDefaults
from oma_host.core.messages import (
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from oma_host.core.results import AgentRunResult, StreamEvent, TokenUsage
from oma_host.orchestration.evaluation import EvaluationConfig
from oma_host.server import models

PROTOCOL_VERSION = "0.1"
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"
_REF = "#/$defs/{model}"


class UnknownBlock(TypedDict):
    """A block type the guard does not know: it passes, and the provider
    adapter maps it or fails the run."""

    type: str


class InitializationOptions(TypedDict):
    defaults: NotRequired[ModelDefaults]
    evaluation: NotRequired[EvaluationConfig]
    stateDir: NotRequired[str]


class InitializeParams(TypedDict):
    processId: NotRequired[int | None]
    capabilities: NotRequired[dict[str, Any]]
    initializationOptions: NotRequired[InitializationOptions]


class AgentCapabilities(TypedDict):
    methods: list[str]
    providers: list[str]
    backends: list[str]
    structuredInput: Literal[True]


class InitializeResult(TypedDict):
    capabilities: dict[Literal["agent"], AgentCapabilities]
    serverInfo: dict[Literal["name", "version"], str]


class AgentListEntry(TypedDict):
    agentId: str
    name: str
    backend: NotRequired[Literal["process", "acp"]]


class TaskParams(TypedDict):
    id: NotRequired[str]
    title: str
    description: str
    assignee: NotRequired[str]
    dependsOn: NotRequired[list[str]]


class TeamParams(TypedDict):
    agents: list[AgentConfig]
    sharedMemory: NotRequired[bool]
    maxConcurrency: NotRequired[int]
    maxTokenBudget: NotRequired[int]
    coordinator: NotRequired[AgentConfig]


class RunTasksParams(TypedDict):
    team: TeamParams
    tasks: list[TaskParams]
    progress: NotRequired[bool]
    runId: NotRequired[str]
    workDoneToken: NotRequired[int | str]


class RunTeamParams(TypedDict):
    team: TeamParams
    goal: str
    progress: NotRequired[bool]
    runId: NotRequired[str]
    workDoneToken: NotRequired[int | str]


class TaskOutcome(TypedDict):
    id: str
    title: str
    assignee: str
    status: Literal["completed", "failed", "skipped"]
    result: NotRequired[AgentRunResult]
    reason: NotRequired[str]


class TeamResult(TypedDict):
    success: bool
    output: str
    tasks: list[TaskOutcome]
    tokenUsage: TokenUsage
    identity: dict[Literal["runId"], str]
    plan: NotRequired[list[dict[str, Any]]]
    errorInfo: NotRequired[dict[str, str]]


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


class ProgressParams(TypedDict):
    token: int | str
    value: StreamEvent | dict[str, Any]


class OmaProgressParams(TypedDict):
    runId: str
    type: Literal[
        "agent_start",
        "agent_complete",
        "budget_exceeded",
        "task_start",
        "task_complete",
        "task_skipped",
    ]
    agent: str | None
    data: Any


class BeforeRunParams(TypedDict):
    agentName: str
    runId: str
    prompt: str
    messages: list[LLMMessage]
    agent: dict[str, Any]


class BeforeRunAnswer(TypedDict):
    prompt: str
    messages: NotRequired[list[LLMMessage]]


class AfterRunParams(TypedDict):
    agentName: str
    runId: str
    result: AgentRunResult


class PermissionParams(TypedDict):
    agentName: str
    title: str
    kind: str | None
    optionKinds: list[str]


class ScoreParams(TypedDict):
    scorer: str
    runId: str
    input: str
    output: str


class ScoreAnswer(TypedDict):
    score: float
    reason: NotRequired[str]


class _Collector:
    """Turns types into schemas, gathering every definition in one ``$defs``."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}

    def __call__(self, kind: Any) -> Any:
        if kind is None:
            return {"type": "null"}
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            schema = kind.model_json_schema(by_alias=True, ref_template=_REF)
        else:
            schema = TypeAdapter(kind).json_schema(by_alias=True, ref_template=_REF)
        self.defs.update(schema.pop("$defs", {}))
        return schema

    def define(self, name: str, kind: Any) -> None:
        self.defs[name] = self(kind)


def build_schema() -> dict[str, Any]:
    """The whole document, deterministic for a given code base."""
    schema = _Collector()
    for block in (TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock, ReasoningBlock):
        schema.define(block.__name__, block)
    schema.defs["ContentBlock"] = {
        "anyOf": [
            {"$ref": f"#/$defs/{name}"}
            for name in (
                "TextBlock",
                "ImageBlock",
                "ToolUseBlock",
                "ToolResultBlock",
                "ReasoningBlock",
            )
        ]
        + [schema(UnknownBlock)],
        "description": "Known blocks are checked field by field; other types pass the guard.",
    }
    schema.define("LLMMessage", LLMMessage)
    schema.defs["RunInput"] = {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/$defs/LLMMessage"}, "minItems": 1},
        ]
    }
    schema.defs["PromptInput"] = {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/$defs/ContentBlock"}, "minItems": 1},
        ]
    }
    schema.define("AgentConfig", AgentConfig)
    schema.define("AgentRunResult", AgentRunResult)
    run_result = {"$ref": "#/$defs/AgentRunResult"}

    def pair(params: Any, result: Any) -> dict[str, Any]:
        return {
            "params": schema(params),
            "result": result if isinstance(result, dict) else schema(result),
        }

    methods = {
        "initialize": pair(InitializeParams, InitializeResult),
        "shutdown": pair(None, None),
        "agent/create": pair(models.CreateParams, dict[Literal["agentId"], str]),
        "agent/run": pair(models.RunParams, run_result),
        "agent/stream": pair(models.StreamParams, run_result),
        "agent/prompt": pair(models.PromptParams, run_result),
        "agent/history": pair(models.AgentIdParams, dict[Literal["messages"], list[LLMMessage]]),
        "agent/state": pair(models.AgentIdParams, _AgentState),
        "agent/reset": pair(models.AgentIdParams, None),
        "agent/dispose": pair(models.AgentIdParams, None),
        "agent/list": pair(models.ListParams, dict[Literal["agents"], list[AgentListEntry]]),
        "oma/runAgent": pair(models.RunAgentParams, run_result),
        "oma/runTasks": pair(RunTasksParams, TeamResult),
        "oma/runTeam": pair(RunTeamParams, TeamResult),
        "oma/evaluation/stats": pair(dict[str, Any], EvaluationStats),
        "oma/evaluation/flush": pair(_FlushParams, FlushResult),
        "oma/evaluation/records": pair(
            _RecordsParams, dict[Literal["records"], list[EvaluationRecord]]
        ),
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "oma-host wire protocol",
        "description": "Params and results of every method; see PROTOCOL.md and the README.",
        "protocolVersion": PROTOCOL_VERSION,
        "hostVersion": __version__,
        "methods": methods,
        "notifications": {
            "$/progress": schema(ProgressParams),
            "oma/progress": schema(OmaProgressParams),
        },
        "serverRequests": {
            "agent/beforeRun": pair(BeforeRunParams, BeforeRunAnswer | None),
            "agent/afterRun": pair(AfterRunParams, AgentRunResult | None),
            "agent/requestPermission": pair(PermissionParams, dict[Literal["approve"], bool]),
            "oma/evaluation/score": pair(ScoreParams, ScoreAnswer),
        },
        "$defs": dict(sorted(schema.defs.items())),
    }


class _AgentState(TypedDict):
    status: Literal["idle", "running", "completed", "error"]
    tokenUsage: TokenUsage


class _FlushParams(TypedDict):
    timeoutMs: NotRequired[float]


class _RecordsParams(TypedDict):
    runId: NotRequired[str]
    limit: NotRequired[int]


def _resolve_refs(value: Any) -> Any:
    """``x-oma-ref`` markers (see messages.schema_ref) become ``$ref``s."""
    if isinstance(value, dict):
        if "x-oma-ref" in value:
            rest = {k: _resolve_refs(v) for k, v in value.items() if k != "x-oma-ref"}
            return {"$ref": f"#/$defs/{value['x-oma-ref']}", **rest}
        return {key: _resolve_refs(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolve_refs(item) for item in value]
    return value


def render_schema() -> str:
    document = _resolve_refs(build_schema())
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def write_schema(path: str | None) -> None:
    text = render_schema()
    if path is None:
        print(text, end="")
    else:
        Path(path).write_text(text, encoding="utf-8")
