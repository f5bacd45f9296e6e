"""What an LLM agent is on the ACP door when its config does not say: a
coding agent, as editors expect.

An LLM agent whose config grants no tools (neither ``tools`` nor
``toolPreset``) gets open-multi-agent's ``full`` preset (``file_read``,
``grep``, ``glob``, ``file_write``, ``file_edit``, ``shell``) and
``update_plan``, as open-multi-agent's ``defaultToolPreset`` does; its
``disallowedTools`` still take tools away. One that leaves ``environment``
unset is told where it works and the project's instructions
(:mod:`oma_host.llm.environment`). Every call still goes through the
session's permission mode. The default agent (no agents file) is such an
agent; a process or ACP agent is left as it is.
"""

from __future__ import annotations

from typing import Any

from oma_host.core.config import AgentConfig, ToolPreset

CODING_PRESET: ToolPreset = "full"
CODING_TOOLS = ["update_plan"]  # added to the preset's


def coding_defaults(config: AgentConfig) -> dict[str, Any]:
    """The changes to ``config`` that make it the door's coding agent (none
    for an agent that is not an LLM agent, or that says otherwise)."""
    if config.backend is not None:
        return {}
    update: dict[str, Any] = {}
    if config.tools is None and config.tool_preset is None:
        update["tool_preset"] = CODING_PRESET
        update["tools"] = list(CODING_TOOLS)
    if config.environment is None:
        update["environment"] = True
    return update
