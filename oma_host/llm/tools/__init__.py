"""The built-in tools' implementations, and the tools one agent may use.

Each module here implements the facts :data:`oma_host.core.tools.BUILTIN_FACTS`
declares for it. Tools are off unless the config grants them; ``delegate``
comes with ``delegates``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from oma_host.core.config import TOOL_PRESETS, AgentConfig
from oma_host.core.errors import InvalidParamsError
from oma_host.core.suggest import did_you_mean
from oma_host.core.tools import BUILTIN_FACTS
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
# Each built-in implements the facts the core declares for it (which the doors read).
assert all(tool.declaration.name in BUILTIN_FACTS for tool in BUILTIN_TOOLS.values())
assert set(BUILTIN_FACTS) == {*BUILTIN_TOOLS, delegate.NAME}
assert all(name in BUILTIN_TOOLS for names in TOOL_PRESETS.values() for name in names)


def check_tool_names(config: AgentConfig) -> None:
    """InvalidParamsError naming the field, the index and the name, for a
    name in ``tools`` or ``disallowedTools`` that is no built-in tool."""
    for field, names in (("tools", config.tools), ("disallowedTools", config.disallowed_tools)):
        for index, name in enumerate(names or []):
            if name in BUILTIN_TOOLS:
                continue
            known = ", ".join(sorted(BUILTIN_TOOLS))
            hint = " (delegate is offered by listing agents in config.delegates)"
            raise InvalidParamsError(
                f"config.{field}[{index}]: unknown tool {name!r}{did_you_mean(name, BUILTIN_TOOLS)}"
                f" (available: {known})" + (hint if name == delegate.NAME else "")
            )


class ToolRegistry:
    """The built-in tools one agent may use, and the folders they are confined to."""

    def __init__(self, config: AgentConfig, delegates: list[str] | None = None) -> None:
        """The tools ``config`` grants (InvalidParamsError for a name that is
        no built-in), and ``delegate`` when ``delegates`` are offered."""
        check_tool_names(config)
        self.tools: dict[str, Tool] = {name: BUILTIN_TOOLS[name] for name in config.granted_tools()}
        if delegates:
            self.tools[delegate.NAME] = delegate.for_delegates(delegates)
        self.root = str(Path(config.cwd or os.getcwd()).resolve())
        # The additional directories, resolved as ``root`` is, each once.
        self.folders = tuple(
            folder
            for folder in dict.fromkeys(
                str(Path(directory).resolve()) for directory in config.additional_directories or []
            )
            if folder != self.root
        )
