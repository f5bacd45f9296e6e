"""Which request brings back an ACP session a previous host opened, and how answers are read.

``session/resume`` when the agent can, else ``session/load``, whose replayed
history the bridge drops; an agent with neither, or one that refuses, gets a
new session, and the next run a ``session_restarted`` event saying why.
"""

from __future__ import annotations

from typing import Any

from acp.schema import (
    AgentCapabilities,
    LoadSessionResponse,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
)
from pydantic import BaseModel, ConfigDict


class AnyAnswer(BaseModel):
    """An answer this library's schema has no model for (``session/set_model``,
    which older agents serve): any object."""

    model_config = ConfigDict(extra="allow")


# What each request's answer is read as (unknown fields are the agent's business).
RESUME_ANSWERS: dict[str, type[BaseModel]] = {
    "session/resume": ResumeSessionResponse,
    "session/load": LoadSessionResponse,
}
CHOICE_ANSWERS: dict[str, type[BaseModel]] = {
    "session/set_config_option": SetSessionConfigOptionResponse,
    "session/set_mode": SetSessionModeResponse,
    "session/set_model": AnyAnswer,
}


def resume_method(capabilities: AgentCapabilities | None) -> str | None:
    """``session/resume`` or ``session/load``, whichever the agent offers
    (resume first: nothing is replayed); None when it offers neither."""
    if capabilities is None:
        return None
    sessions: Any = capabilities.session_capabilities
    if sessions is not None and getattr(sessions, "resume", None) is not None:
        return "session/resume"
    if capabilities.load_session:
        return "session/load"
    return None
