"""``oma-host schema``: a JSON Schema of every method, notification and client request.

Generated from the method registry and the handlers' signatures, so client
authors can generate types. docs/protocol.schema.json holds the current schema,
and a test fails when it differs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypedDict

from oma_host.core.config import AgentConfig
from oma_host.core.events import RunEvent
from oma_host.core.messages import (
    ImageBlock,
    LLMMessage,
    ReasoningBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from oma_host.core.results import AgentRunResult, StreamEvent
from oma_host.core.version import __version__
from oma_host.orchestration.evaluation import EvaluationConfig
from oma_host.server import registry
from oma_host.server.outgoing import CLIENT_REQUESTS, NOTIFICATIONS

PROTOCOL_VERSION = "0.2"
ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "docs" / "protocol.schema.json"
_REF = "#/$defs/{model}"
_BLOCKS = ("TextBlock", "ImageBlock", "ToolUseBlock", "ToolResultBlock", "ReasoningBlock")
_RUN_EVENT = "An event a run streams while it runs: every StreamEvent but done."
_STREAM_EVENT = "An event of a run's stream, which ends with done (the result)."


class UnknownBlock(TypedDict):
    """A block type the guard does not know: it passes, and the provider
    adapter maps it or fails the run."""

    type: str


class _Collector:
    """Turns types into schemas, gathering every definition in one ``$defs``;
    a type defined by name is referenced wherever it is used."""

    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self._named: dict[Any, str] = {}

    def __call__(self, kind: Any) -> Any:
        if kind is None:
            return {"type": "null"}
        if kind in self._named:
            return {"$ref": _REF.format(model=self._named[kind])}
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            schema = kind.model_json_schema(by_alias=True, ref_template=_REF)
        else:
            schema = TypeAdapter(kind).json_schema(by_alias=True, ref_template=_REF)
        self.defs.update(schema.pop("$defs", {}))
        return schema

    def define(self, name: str, kind: Any) -> None:
        self.defs[name] = self(kind)
        self._named[kind] = name


def build_schema() -> dict[str, Any]:
    """The whole document, deterministic for a given code base."""
    schema = _Collector()
    for block in (TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock, ReasoningBlock):
        schema.define(block.__name__, block)
    schema.defs["ContentBlock"] = {
        "anyOf": [{"$ref": _REF.format(model=name)} for name in _BLOCKS] + [schema(UnknownBlock)],
        "description": "Known blocks are checked field by field; other types pass the guard.",
    }
    schema.define("LLMMessage", LLMMessage)
    schema.defs["RunInput"] = {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": _REF.format(model="LLMMessage")}, "minItems": 1},
        ]
    }
    schema.defs["PromptInput"] = {
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"$ref": _REF.format(model="ContentBlock")}, "minItems": 1},
        ]
    }
    schema.define("AgentConfig", AgentConfig)
    schema.define("EvaluationConfig", EvaluationConfig)
    schema.define("AgentRunResult", AgentRunResult)
    # The events, each by its ``type`` (oma_host/core/events.py): what
    # $/progress carries, and what Agent.stream yields (``done`` last).
    schema.defs["RunEvent"] = schema(
        Annotated[RunEvent, Field(discriminator="type", description=_RUN_EVENT)]
    )
    schema.defs["StreamEvent"] = schema(
        Annotated[StreamEvent, Field(discriminator="type", description=_STREAM_EVENT)]
    )

    def pair(params: Any, result: Any) -> dict[str, Any]:
        return {"params": schema(params), "result": schema(result)}

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "oma-host wire protocol",
        "description": "Params and results of every method; see docs/protocol.md.",
        "protocolVersion": PROTOCOL_VERSION,
        "hostVersion": __version__,
        "methods": {
            str(spec.method): pair(spec.wire_params, spec.result) for spec in registry.load_all()
        },
        "notifications": {str(name): schema(kind) for name, kind in NOTIFICATIONS.items()},
        "serverRequests": {
            str(name): pair(params, answer) for name, (params, answer) in CLIENT_REQUESTS.items()
        },
        "$defs": dict(sorted(schema.defs.items())),
    }


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
