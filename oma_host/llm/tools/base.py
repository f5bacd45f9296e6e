"""What a tool is to the LLM backend, and how a call of one runs.

A built-in tool is one :func:`declare` call: name, description, a typed params
model that makes the schema the model sees and validates each call, its effect
and its run. A call runs with the agent's :class:`Workspace`; file work runs in
a worker thread so a large grep does not stall the event loop, and stops at its
next check when cancelled. Whatever goes wrong is an error result, never an
exception.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Generic, Protocol, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema

from oma_host.core.config import DEFAULT_TOOL_TIMEOUT_MS, SandboxMode
from oma_host.core.editor_channel import NO_EDITOR, EditorChannel
from oma_host.core.events import EmitFn
from oma_host.core.tools import ToolDeclaration, ToolFacts
from oma_host.core.validation import describe_validation_error, predicate_error
from oma_host.workspace.confined import EVERY_FOLDER, Root, Stop, ToolError, named, root_of
from oma_host.workspace.permissions import SearchRules, confirm_approved

CALL_BUDGET_S = 20.0  # then grep and glob answer with what they found
DEFAULT_EDITOR_TIMEOUT_S = 30.0

T = TypeVar("T")
P = TypeVar("P", bound="ToolParams")
# A tool's output: text, or parts (an MCP tool's text, images and files).
ToolOutput = str | list[dict[str, Any]]


class ToolParams(BaseModel):
    """A built-in tool's input: strict types, unknown fields ignored."""

    model_config = ConfigDict(strict=True, frozen=True)


def _non_empty(value: str) -> str:
    if not value:
        raise predicate_error("must be a non-empty string")
    return value


# A string the call must not leave empty (a path, a pattern).
NonEmpty = Annotated[str, AfterValidator(_non_empty)]


class _PlainSchema(GenerateJsonSchema):
    """pydantic's JSON schema without the titles and defaults it adds."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def default_schema(self, schema: Any) -> JsonSchemaValue:
        # The default is the run's to apply; the model is told in the description.
        return self.generate_inner(schema["schema"])

    def generate(self, schema: CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        generated = super().generate(schema, mode)
        generated.pop("title", None)
        return generated


def input_schema(params: type[ToolParams]) -> dict[str, Any]:
    """The JSON schema the model sees for ``params``."""
    generated = params.model_json_schema(schema_generator=_PlainSchema)
    return {
        "type": "object",
        "properties": generated.get("properties", {}),
        "required": generated.get("required", []),
    }


@dataclass(frozen=True)
class Workspace:
    """Where one agent's tools work: its ``cwd`` (resolved), its additional
    directories, and its door's editor channel, asked for at most
    ``editor_timeout_s`` a request."""

    root: str
    editor: EditorChannel = NO_EDITOR
    editor_timeout_s: float = DEFAULT_EDITOR_TIMEOUT_S
    # How long one call may take (toolTimeoutMs), for a tool that keeps to it
    # itself (the shell's most and default time).
    call_timeout_s: float = DEFAULT_TOOL_TIMEOUT_MS / 1000
    # The agent's secret values, kept out of what a command sees.
    secrets: tuple[str, ...] = ()
    # The file the permission policy decided for, as it resolved then
    # (relative to the root), when the call's target is a path.
    approved: str | None = None
    # What a search's walk leaves out by the permission rules (None: nothing).
    search_rules: SearchRules | None = None
    # Where a tool reports an event of the run (update_plan's plan, the
    # shell's output), and the id of the call being run.
    report: EmitFn | None = None
    call_id: str | None = None
    # Hands a task to a delegate, by name, and answers with its output, for
    # the ``delegate`` tool's call (ToolError when it cannot or the delegate
    # fails); None for an agent without ``delegates``.
    delegate: Callable[[str, str], Awaitable[str]] | None = None
    # Variables every command the call starts gets over the host's: the
    # run's delegation limits (oma_host.core.delegation.Lineage.environment).
    command_env: Mapping[str, str] = field(default_factory=dict)
    # The folders the tools reach besides ``root`` (absolute, resolved): the
    # config's ``additionalDirectories``, each confined as ``root`` is.
    folders: tuple[str, ...] = ()
    # The OS sandbox the shell's commands run in (sandbox.chosen_sandbox).
    sandbox: SandboxMode = "off"

    @property
    def roots(self) -> tuple[str, ...]:
        """Every folder the tools reach, ``root`` first."""
        return (self.root, *self.folders)

    def root_for(self, path: str) -> str:
        """The folder ``path`` is confined to (:func:`root_of`)."""
        return root_of(path, self.roots)

    def shown(self, root: str, resolved: str) -> str:
        """A path beneath the folder ``root`` as the model is told it
        (:func:`named`: absolute in an additional directory)."""
        return named(root, self.root, resolved) or "."

    def confirm(self, path: str, resolved: str) -> None:
        """Refuse a call whose file (``resolved``, beneath the folder of
        ``path``) is no longer the one the permission policy decided for
        (:func:`oma_host.workspace.permissions.confirm_approved`)."""
        confirm_approved(path, named(self.root_for(path), self.root, resolved), self.approved)

    def left_out(self, path: str, resolved: str, *, reads: bool, root: str | None = None) -> bool:
        """Whether a search leaves out ``path`` (leading to ``resolved``,
        both beneath the folder ``root``, ``cwd`` by default), which the
        permission rules keep from it (:class:`SearchRules`)."""
        rules = self.search_rules
        return rules is not None and rules.hides(path, resolved, reads=reads, root=root)

    async def in_thread(self, work: Callable[[Root], T], path: str = ".") -> T:
        """``work`` in a worker thread, given the folder ``path`` is
        confined to opened (:meth:`root_for`)."""
        inside = EVERY_FOLDER if self.folders else "the agent's working directory"

        def run() -> T:
            with Root(self.root_for(path), inside=inside) as root:
                return work(root)

        return await asyncio.to_thread(run)


class Tool(Protocol):
    """A tool the model may call: a built-in or an MCP server's."""

    @property
    def declaration(self) -> ToolDeclaration: ...

    async def call(
        self, arguments: dict[str, Any], workspace: Workspace
    ) -> tuple[ToolOutput, bool]:
        """Run it on a JSON object: (output, is_error)."""
        ...


@dataclass(frozen=True)
class BuiltinTool(Generic[P]):
    """A built-in tool (see the module docstring); made by :func:`declare`."""

    declaration: ToolDeclaration
    params: type[P]
    # Runs a validated call; raises ToolError (or OSError) for an error result.
    run: Callable[[P, Workspace, Stop], Awaitable[str]]

    async def execute(self, arguments: dict[str, Any], workspace: Workspace, stop: Stop) -> str:
        """Validate and run a call: its output, or ValidationError, ToolError,
        OSError (or whatever else went wrong) raised."""
        return await self.run(self.params.model_validate(arguments), workspace, stop)

    async def call(
        self, arguments: dict[str, Any], workspace: Workspace
    ) -> tuple[ToolOutput, bool]:
        name = self.declaration.name
        stop = Stop(CALL_BUDGET_S)
        try:
            return (await self.execute(arguments, workspace, stop), False)
        except asyncio.CancelledError:
            stop.cancel()  # the worker gives up at its next check
            raise
        except ValidationError as error:
            return (f"{name}: {describe_validation_error(error, '')}", True)
        except ToolError as error:
            return (f"{name}: {error}", True)
        except OSError as error:
            return (f"{name}: {error.strerror or error}", True)
        except Exception as error:  # e.g. a NUL byte in a path (ValueError)
            return (f"{name}: {type(error).__name__}: {error}", True)


def declare(
    facts: ToolFacts, params: type[P], run: Callable[[P, Workspace, Stop], Awaitable[str]]
) -> BuiltinTool[P]:
    """A built-in tool: its facts (:data:`oma_host.core.tools.BUILTIN_FACTS`),
    with the schema ``params`` makes, and its run."""
    return BuiltinTool(ToolDeclaration.of(facts, input_schema(params)), params, run)


def left_out_note(count: int) -> str:
    """The line a search ends with when the permission rules kept ``count``
    files or folders out of it."""
    return f"[{count} {'path' if count == 1 else 'paths'} left out by the permission rules]"


def unknown_tool(name: str, available: list[str]) -> tuple[ToolOutput, bool]:
    """The error result for a name the model made up."""
    known = ", ".join(available) or "none"
    return (f"unknown tool {name!r}; the tools available are: {known}", True)


async def call_tool(tool: Tool, arguments: Any, workspace: Workspace) -> tuple[ToolOutput, bool]:
    """Run one call of ``tool``: (output, is_error); input that is not a
    JSON object is an error result."""
    if not isinstance(arguments, dict):
        return (f"{tool.declaration.name}: the tool input must be a JSON object", True)
    return await tool.call(arguments, workspace)
