"""What an LLM agent is on the ACP door when its config does not say: a coding agent.

One that grants no tools gets open-multi-agent's ``full`` preset and
``update_plan``, and one that leaves ``environment`` unset gets the environment
prompt, as editors expect of an agent; every call still goes through the
session's permission mode. A process or ACP agent is left as it is.
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
