"""Which agents the ACP door serves: the agents file, else the user's
``$XDG_CONFIG_HOME/oma-host/agents.json``, else one default LLM agent for
whichever provider key is set.

The file is a JSON array of AgentConfig (the shape of ``agent/create``'s
``config``); the first is the default agent of a new session. Every config
is checked as an Agent would check it at construction, and every name in a
config's ``delegates`` must be another agent of the file with no loop among
them, so a bad file is a :class:`AgentsFileError` naming the file and the
JSON path before any ACP traffic, never a failure in the middle of a session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from oma_host.core.config import AgentConfig, parse_agent_config
from oma_host.core.delegation import check_delegate_graph
from oma_host.core.errors import OmaError
from oma_host.core.places import FolderError, config_dir, private_folder
from oma_host.core.plugins import check_agent_config
from oma_host.core.provider_facts import DEFAULT_PROVIDER, default_providers, facts_of


class AgentsFileError(Exception):
    """The agents file cannot be read, is not JSON, or holds an invalid config."""


@dataclass(frozen=True)
class ServedAgents:
    """The agents the door serves (:mod:`.agents`), or why it serves none:
    ``problem`` is the agents file's error, which refuses every session.
    ``defaulted``: no agents file, so the one default agent (for whichever
    provider has a key; a key kept by a login since is looked for again)."""

    configs: list[AgentConfig]
    problem: str | None = None
    defaulted: bool = False


def user_agents_file() -> Path:
    """``$XDG_CONFIG_HOME/oma-host/agents.json`` (``~/.config`` by default)."""
    return Path(config_dir()) / "agents.json"


def default_agent() -> AgentConfig:
    """One LLM agent, on its default model, for the first provider whose key
    is set (:func:`~oma_host.core.provider_facts.default_providers`; Anthropic
    when none is: ``authenticate`` and the first prompt then name the variable)."""
    facts = next((f for f in default_providers() if f.key_is_set()), facts_of(DEFAULT_PROVIDER))
    return parse_agent_config(
        {"name": facts.name, "provider": facts.name, "model": facts.default_model}
    )


def load_agents(path: str | None) -> list[AgentConfig]:
    """The agents to serve; see the module docstring for where they come from.
    The user's agents file is read only from a folder of the user's own
    (:func:`~oma_host.core.places.private_folder`): one others may write to,
    or a link to anywhere, could hand the door anyone's agents."""
    if path is None:
        found = user_agents_file()
        if not found.is_file():
            return [default_agent()]
        try:
            private_folder(config_dir())
        except FolderError as error:
            raise AgentsFileError(f"{found}: not read: {error}") from None
        path = str(found)
    return parse_agents_file(path)


def parse_agents_file(path: str) -> list[AgentConfig]:
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise AgentsFileError(f"{path}: cannot be read: {error}") from None
    return parse_agents_text(path, data)


def parse_agents_text(path: str, data: bytes) -> list[AgentConfig]:
    """The configs of the agents file at ``path``, whose bytes are ``data``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise AgentsFileError(f"{path}: cannot be read: {error}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise AgentsFileError(
            f"{path}: not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    if not isinstance(value, list) or not value:
        raise AgentsFileError(f"{path}: $ must be a non-empty array of agent configs")
    configs: list[AgentConfig] = []
    names: set[str] = set()
    for index, item in enumerate(value):
        where = f"$[{index}]"
        try:
            config = _checked(item, where)
        except (OmaError, AgentsFileError) as error:
            raise AgentsFileError(f"{path}: {error}") from None
        if config.name in names:
            raise AgentsFileError(f"{path}: {where}.name: {config.name!r} is used twice")
        names.add(config.name)
        configs.append(config)
    try:
        check_delegate_graph(configs)
    except OmaError as error:
        raise AgentsFileError(f"{path}: {error}") from None
    return configs


def _checked(item: object, where: str) -> AgentConfig:
    if not isinstance(item, Mapping):
        raise AgentsFileError(f"{where} must be an object")
    config = parse_agent_config(item, None, where)
    hooks = config.hooks
    if hooks is not None and (hooks.before_run or hooks.after_run):
        # Hooks are answered by a JSON-RPC client; an ACP editor has no such method.
        raise AgentsFileError(
            f"{where}.hooks: hooks need a JSON-RPC client and cannot run behind the ACP door"
        )
    try:
        check_agent_config(config)
    except OmaError as error:
        # The backend's checks name the field as ``config.``; here it is the file's entry.
        message = str(error)
        if message.startswith("config."):
            message = where + message[len("config") :]
        raise AgentsFileError(message) from None
    return config
