"""The choices an ACP session offers the editor: config options, and modes for older clients.

``agent``, ``model``, ``mode`` (the permission presets), ``sandbox`` (the
shell's OS sandbox) and ``thought_level``; a process or ACP agent has only
``agent``. The category of ``agent`` is
``_agent`` because ACP reserves names without a leading ``_``. A session's
:class:`Choices` are stored with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, cast, get_args

from acp import RequestError

from oma_host.core.config import (
    PERMISSION_MODES,
    SANDBOX_MODES,
    AgentConfig,
    PermissionMode,
    SandboxMode,
    ThinkingConfig,
    ThinkingEffort,
)
from oma_host.core.cost import can_reason
from oma_host.core.provider_facts import DEFAULT_PROVIDER, provider_facts
from oma_host.workspace.sandbox import chosen_sandbox, sandbox_support

log = logging.getLogger(__name__)

ThoughtLevel = Literal["off", ThinkingEffort]
THOUGHT_LEVELS: tuple[ThoughtLevel, ...] = get_args(ThoughtLevel)
# How long session/new waits for a provider's model list before offering the
# models its table knows.
MODEL_LIST_TIMEOUT_S = 5.0
# The agent picker's category: a custom one, as ACP spells those.
AGENT_CATEGORY = "_agent"
SANDBOX_CATEGORY = "_sandbox"

MODES: dict[PermissionMode, tuple[str, str]] = {
    "ask": ("Ask", "Reading tools run; file writes, commands and other tools ask first"),
    "accept-edits": ("Accept edits", "File writes run without asking; commands still ask"),
    "auto": (
        "Auto",
        "File writes and commands in the sandbox run without asking; a command outside the "
        "sandbox, and every other tool, ask",
    ),
    "read-only": ("Read only", "Only reading tools run, whatever the rules say"),
}
assert tuple(MODES) == PERMISSION_MODES

SANDBOXES: dict[SandboxMode, tuple[str, str]] = {
    "off": ("Off", "Commands run with your rights and network (auto mode uses workspace write)"),
    "workspace-write": (
        "Workspace write",
        "Commands write only in the workspace and a temp folder, with no network",
    ),
    "read-only": ("Read only", "Commands write nowhere but a temp folder, with no network"),
}
assert tuple(SANDBOXES) == SANDBOX_MODES


@dataclass(frozen=True)
class Choices:
    """What a session runs: the agent (its name), model, mode, thought level
    and sandbox."""

    agent: str
    model: str | None
    mode: PermissionMode
    thought_level: ThoughtLevel
    sandbox: SandboxMode = "off"

    @classmethod
    def of(cls, config: AgentConfig) -> Choices:
        """An agent's own choices, as the agents file sets them."""
        return cls(
            config.name,
            config.model,
            config.permission_mode or "ask",
            _level(config),
            config.sandbox or "off",
        )

    @classmethod
    def stored(cls, settings: dict[str, Any], config: AgentConfig) -> Choices:
        """The choices stored ``settings`` name for ``config`` (the agent they
        name, or the default when that one is gone: then its own choices)."""
        own = cls.of(config)
        if settings.get("agent") != config.name:
            return own
        mode = settings.get("mode")
        level = settings.get("thoughtLevel")
        sandbox = settings.get("sandbox")
        return cls(
            config.name,
            settings.get("model") or own.model,
            cast(PermissionMode, mode) if mode in PERMISSION_MODES else own.mode,
            cast(ThoughtLevel, level) if level in THOUGHT_LEVELS else own.thought_level,
            cast(SandboxMode, sandbox) if sandbox in SANDBOX_MODES else own.sandbox,
        )

    def settings(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "model": self.model,
            "mode": self.mode,
            "thoughtLevel": self.thought_level,
            "sandbox": self.sandbox,
        }

    def applied(self, config: AgentConfig) -> dict[str, Any]:
        """The changes to ``config`` that make its agent run these choices."""
        update: dict[str, Any] = {}
        if config.backend is not None:
            return update
        if self.model is not None:
            update["model"] = self.model
        update["permission_mode"] = self.mode
        update["sandbox"] = self.sandbox
        level = self.thought_level
        if level != _level(config):
            update["thinking"] = None if level == "off" else ThinkingConfig(effort=level)
        return update


def _level(config: AgentConfig) -> ThoughtLevel:
    thinking = config.thinking
    if thinking is None:
        return "off"
    return thinking.effort or "medium"


def switched(
    choices: Choices, config_id: str, value: str, configs: dict[str, AgentConfig], models: list[str]
) -> Choices:
    """``choices`` with ``config_id`` set to ``value`` (a new agent brings its
    own choices); -32602 naming the allowed values otherwise."""
    config = configs[choices.agent]
    llm = config.backend is None
    if config_id == "agent":
        if value not in configs:
            raise bad_value(config_id, value, list(configs))
        return Choices.of(configs[value])
    if config_id == "model" and llm:
        if value not in models:
            raise bad_value(config_id, value, models)
        return replace(choices, model=value)
    if config_id == "mode" and llm:
        if value not in MODES:
            raise bad_value(config_id, value, list(MODES))
        return replace(choices, mode=value)
    if config_id == "sandbox" and llm:
        if value not in SANDBOXES:
            raise bad_value(config_id, value, list(SANDBOXES))
        return replace(choices, sandbox=value)
    if config_id == "thought_level" and llm and can_reason(config):
        if value not in THOUGHT_LEVELS:
            raise bad_value(config_id, value, list(THOUGHT_LEVELS))
        return replace(choices, thought_level=value)
    offered = [option["id"] for option in config_options(choices, configs, models)]
    raise bad_value("configId", config_id, offered)


def bad_value(field: str, value: str, allowed: list[str]) -> RequestError:
    return RequestError.invalid_params(
        {"type": "InvalidParams", "message": f"{field}: {value!r} is not one of {allowed}"}
    )


def _select(
    option_id: str,
    name: str,
    category: str,
    current: str,
    values: Sequence[tuple[str, str]],
    description: str | None = None,
) -> dict[str, Any]:
    option: dict[str, Any] = {
        "type": "select",
        "id": option_id,
        "name": name,
        "category": category,
        "currentValue": current,
        "options": [{"value": value, "name": label} for value, label in values],
    }
    if description is not None:
        option["description"] = description
    return option


def sandbox_description(choices: Choices) -> str:
    """What the sandbox option says: what confines commands here, or that
    nothing does and commands ask (sandbox_support, probed when the session
    was opened)."""
    used = chosen_sandbox(choices.mode, choices.sandbox)
    found = sandbox_support()
    if found.tool is None:
        return f"Not available here ({found.reason}): commands ask and run without a sandbox"
    tool = "bubblewrap" if found.tool == "bwrap" else "Landlock"
    if used == "off":
        return f"Off: commands run with your rights and network ({tool} is available)"
    return f"{SANDBOXES[used][1]} ({tool})"


def config_options(
    choices: Choices, configs: dict[str, AgentConfig], models: list[str]
) -> list[dict[str, Any]]:
    """The session's config options (wire form), each with its current value."""
    config = configs[choices.agent]
    options = [_select("agent", "Agent", AGENT_CATEGORY, choices.agent, [(n, n) for n in configs])]
    if config.backend is not None:
        return options
    current_model = choices.model or (models[0] if models else "")
    options.append(_select("model", "Model", "model", current_model, [(m, m) for m in models]))
    modes = [(mode, label) for mode, (label, _) in MODES.items()]
    options.append(_select("mode", "Mode", "mode", choices.mode, modes))
    sandboxes = [(sandbox, label) for sandbox, (label, _) in SANDBOXES.items()]
    options.append(
        _select(
            "sandbox",
            "Sandbox",
            SANDBOX_CATEGORY,
            choices.sandbox,
            sandboxes,
            sandbox_description(choices),
        )
    )
    if can_reason(config):
        levels = [(level, level.capitalize()) for level in THOUGHT_LEVELS]
        options.append(
            _select("thought_level", "Thinking", "thought_level", choices.thought_level, levels)
        )
    return options


def mode_state(choices: Choices, configs: dict[str, AgentConfig]) -> dict[str, Any] | None:
    """The ACP ``modes`` of a session (an LLM agent's), or None."""
    if configs[choices.agent].backend is not None:
        return None
    return {
        "currentModeId": choices.mode,
        "availableModes": [
            {"id": mode, "name": label, "description": description}
            for mode, (label, description) in MODES.items()
        ],
    }


class ModelLists:
    """Each provider's model list, asked once a process (per provider,
    endpoint and key variable) and kept. A failure or a slow answer offers
    the agent's own model and the models the provider's table knows
    (:func:`known_models`), and is asked again after ``RETRY_AFTER_S``, so
    an unreachable provider does not hold up every ``session/new``."""

    RETRY_AFTER_S = 300.0

    def __init__(self) -> None:
        self._lists: dict[tuple[str | None, str | None, str | None], list[str]] = {}
        self._failed: dict[tuple[str | None, str | None, str | None], float] = {}

    async def models(self, config: AgentConfig) -> list[str]:
        """The models to offer for ``config`` (its model first)."""
        own = [model for model in (config.model, *(config.models or [])) if model]
        if config.models or config.backend is not None:
            return list(dict.fromkeys(own))
        key = (config.provider, config.base_url, config.api_key_env)
        listed = self._lists.get(key)
        now = time.monotonic()
        if (
            listed is None
            and now - self._failed.get(key, -self.RETRY_AFTER_S) >= self.RETRY_AFTER_S
        ):
            listed = await self._fetch(config)
            if listed:
                self._lists[key] = listed
            else:
                self._failed[key] = now
        return list(dict.fromkeys([*own, *(listed or known_models(config))]))

    @staticmethod
    async def _fetch(config: AgentConfig) -> list[str]:
        """The provider's list, or [] when it cannot be had (logged)."""
        from oma_host.providers.base import ProviderError
        from oma_host.providers.model_list import list_models

        provider = config.provider or DEFAULT_PROVIDER
        try:
            asked = list_models(config.model_copy(update={"provider": provider}))
            listed = await asyncio.wait_for(asked, MODEL_LIST_TIMEOUT_S)
        except (ProviderError, TimeoutError) as error:
            log.info("no model list for agent %r: %s", config.name, error)
            return []
        return [info["id"] for info in listed]


def known_models(config: AgentConfig) -> list[str]:
    """The models the table of ``config``'s provider knows and offers
    (:meth:`~oma_host.core.model_facts.ModelTable.offered`); none for an
    agent of another server speaking its provider's wire (Ollama's, vLLM's)."""
    facts = provider_facts(config.provider or DEFAULT_PROVIDER)
    if facts is None or not facts.serves_own_models(config.base_url):
        return []
    return facts.models.offered()
