"""The built-in tools an LLM agent may call, and the registry of one agent's.

Each built-in is one module here, declared once with :func:`.base.declare`:
``file_read``, ``grep`` and ``glob`` read, ``file_write`` and ``file_edit``
write, each confined to the agent's ``cwd``; ``shell`` runs a command line
there; ``update_plan`` streams the agent's plan. Tools are off unless
``config.tools`` lists them; ``delegate`` is offered to an agent whose
``config.delegates`` lists agents instead. Importing this package registers every
built-in's declaration with the core (:func:`oma_host.core.tools.builtin_tool`),
where a door reads it by name.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oma_host.core.errors import InvalidParamsError
from oma_host.core.tools import register_builtin_tool
from oma_host.llm.tools import (
    delegate,
    file_edit,
    file_read,
    file_write,
    glob,
    grep,
    shell,
    update_plan,
)
from oma_host.llm.tools.base import BuiltinTool, Tool

# The one list of built-ins: a new tool's module adds a line here.
BUILTIN_TOOLS: dict[str, BuiltinTool[Any]] = {
    tool.declaration.name: tool
    for tool in (
        file_read.TOOL,
        grep.TOOL,
        glob.TOOL,
        file_write.TOOL,
        file_edit.TOOL,
        shell.TOOL,
        update_plan.TOOL,
    )
}
for _tool in (*BUILTIN_TOOLS.values(), delegate.TOOL):
    register_builtin_tool(_tool.declaration)


class ToolRegistry:
    """The built-in tools one agent may use, and the directory they are confined to."""

    def __init__(
        self, names: list[str] | None, cwd: str | None, delegates: list[str] | None = None
    ) -> None:
        """InvalidParamsError for a name that is no built-in."""
        self.tools: dict[str, Tool] = {}
        for index, name in enumerate(names or []):
            if name not in BUILTIN_TOOLS:
                known = ", ".join(sorted(BUILTIN_TOOLS))
                hint = " (delegate is offered by listing agents in config.delegates)"
                raise InvalidParamsError(
                    f"config.tools[{index}]: unknown tool {name!r} (available: {known})"
                    + (hint if name == delegate.NAME else "")
                )
            self.tools[name] = BUILTIN_TOOLS[name]
        if delegates:
            self.tools[delegate.NAME] = delegate.for_delegates(delegates)
        self.root = str(Path(cwd or os.getcwd()).resolve())
