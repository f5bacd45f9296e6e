"""Which agents the ACP door serves, read once: the agents file, else the
user's ``agents.json``, else one default agent.

``initialize`` is answered from the reading; the configs are checked from
the same parsed JSON afterwards, since pydantic is slow to import."""

from __future__ import annotations

import os

from oma_host.acp_server.handshake import env_var_method
from oma_host.core import quickjson
from oma_host.core.credentials import key_for
from oma_host.core.places import config_dir, private_folder
from oma_host.core.provider_table import offered, provider_table

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from oma_host.core.config import AgentConfig


class AgentsFileError(Exception):
    """The agents file cannot be read, is not JSON, or holds an invalid config."""


class AgentsReading:
    """The agents as read, before any config is checked: the file's path
    (None: the default agent), its parsed entries, why it serves no agent
    (``problem``: unreadable, not JSON, not a non-empty array) and the auth
    methods its LLM agents' keys can come from, by id, in wire form
    (:func:`.handshake.env_var_method`)."""

    __slots__ = ("auth_methods", "defaulted", "entries", "path", "problem")

    def __init__(
        self,
        path: str | None,
        entries: list[Any],
        problem: str | None = None,
        defaulted: bool = False,
    ) -> None:
        self.path = path
        self.entries = entries
        self.problem = problem
        self.defaulted = defaulted
        self.auth_methods = _auth_methods(entries)


class ServedAgents:
    """The agents the door serves, or why it serves none: ``problem`` is the
    agents file's error, which refuses every session. ``defaulted``: no
    agents file, so the one default agent (for whichever provider has a key;
    a key kept by a login since is looked for again). ``auth_methods``: the
    reading's, by id, which ``initialize`` offers and ``authenticate`` checks."""

    __slots__ = ("auth_methods", "configs", "defaulted", "problem")

    def __init__(
        self,
        configs: list[AgentConfig],
        problem: str | None = None,
        defaulted: bool = False,
        auth_methods: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.configs = configs
        self.problem = problem
        self.defaulted = defaulted
        self.auth_methods = auth_methods or {}


def user_agents_file() -> str:
    """``$XDG_CONFIG_HOME/oma-host/agents.json`` (``~/.config`` by default)."""
    return os.path.join(config_dir(), "agents.json")


def read_agents(path: str | None) -> AgentsReading:
    """The agents file at ``path`` (None: the user's, else the default agent),
    read once. The user's file is read only from a folder of the user's own
    (:func:`~oma_host.core.places.private_folder`): one others may write to,
    or a link to anywhere, could hand the door anyone's agents."""
    if path is None:
        path = user_agents_file()
        if not os.path.isfile(path):
            return default_reading()
        try:
            private_folder(config_dir())
        except OSError as error:
            return AgentsReading(path, [], f"{path}: not read: {error}")
    try:
        with open(path, "rb") as file:
            text = file.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        return AgentsReading(path, [], f"{path}: cannot be read: {error}")
    try:
        value = quickjson.loads(text)
    except ValueError as error:  # json's JSONDecodeError, which says where
        where = f"{getattr(error, 'msg', error)} at line {getattr(error, 'lineno', '?')}"
        problem = f"{path}: not valid JSON: {where} column {getattr(error, 'colno', '?')}"
        return AgentsReading(path, [], problem)
    if not isinstance(value, list) or not value:
        return AgentsReading(path, [], f"{path}: $ must be a non-empty array of agent configs")
    return AgentsReading(path, value)


def default_reading() -> AgentsReading:
    """One LLM agent, on its default model, for the first default provider
    whose key is set (in the environment or kept by ``oma-host login``);
    Anthropic when none is: ``authenticate`` and the first prompt then name
    the variable."""
    table = provider_table()
    name = next(
        (
            candidate
            for candidate in table["defaultCandidates"]
            if offered(table["providers"][candidate])
            and any(key_for(v) for v in table["providers"][candidate]["keyVariables"])
        ),
        table["defaultProvider"],
    )
    model = table["providers"][name]["defaultModel"]
    return AgentsReading(None, [{"name": name, "provider": name, "model": model}], defaulted=True)


def _auth_methods(entries: list[Any]) -> dict[str, dict[str, Any]]:
    methods = {method["id"]: method for entry in entries for method in _entry_methods(entry)}
    return dict(sorted(methods.items()))


def _entry_methods(entry: Any) -> list[dict[str, Any]]:
    """The ways an LLM agent's key can reach it from the environment, read
    from its fields as its config will read them: none for an external agent
    (``backend``) or one with its own ``apiKey``, else its ``apiKeyEnv``,
    else its provider's. An entry the checks will refuse gives none."""
    if not isinstance(entry, dict) or entry.get("backend") is not None:
        return []
    if _text_field(entry, "apiKey", "api_key"):
        return []
    api_key_env = _text_field(entry, "apiKeyEnv", "api_key_env")
    if api_key_env:
        return [env_var_method((api_key_env,))]
    table = provider_table()
    provider = _text_field(entry, "provider", "provider") or table["defaultProvider"]
    facts = table["providers"].get(provider)
    if facts is None or not offered(facts):
        return []
    return [
        env_var_method(tuple(m["required"]), tuple(m["optional"]), tuple(m["public"]))
        for m in facts["authMethods"]
    ]


def _text_field(entry: dict[str, Any], alias: str, name: str) -> str | None:
    """A config field given by its alias or its name, when it is a string."""
    value = entry.get(alias, entry.get(name))
    return value if isinstance(value, str) else None


def serve_reading(reading: AgentsReading) -> ServedAgents:
    """The agents ``reading`` holds, each config checked (pydantic, imported
    here), or the problem that refuses every session."""
    try:
        configs = checked_configs(reading)
    except AgentsFileError as error:
        return ServedAgents([], str(error), auth_methods=reading.auth_methods)
    return ServedAgents(configs, defaulted=reading.defaulted, auth_methods=reading.auth_methods)


def load_agents(path: str | None) -> list[AgentConfig]:
    """The checked configs of the agents at ``path`` (see :func:`read_agents`)."""
    return checked_configs(read_agents(path))


def checked_configs(reading: AgentsReading) -> list[AgentConfig]:
    """Every config of ``reading`` checked as an Agent would check it at
    construction, and every name in a config's ``delegates`` another agent
    of the file with no loop among them: an :class:`AgentsFileError` naming
    the file and the JSON path otherwise."""
    from oma_host.core.delegation import check_delegate_graph
    from oma_host.core.errors import OmaError

    if reading.problem is not None:
        raise AgentsFileError(reading.problem)
    source = reading.path or "the default agent"
    configs: list[AgentConfig] = []
    names: set[str] = set()
    for index, item in enumerate(reading.entries):
        where = f"$[{index}]"
        try:
            config = _checked(item, where)
        except (OmaError, AgentsFileError) as error:
            raise AgentsFileError(f"{source}: {error}") from None
        if config.name in names:
            raise AgentsFileError(f"{source}: {where}.name: {config.name!r} is used twice")
        names.add(config.name)
        configs.append(config)
    try:
        check_delegate_graph(configs)
    except OmaError as error:
        raise AgentsFileError(f"{source}: {error}") from None
    return configs


def _checked(item: object, where: str) -> AgentConfig:
    from oma_host.core.config import parse_agent_config
    from oma_host.core.errors import OmaError
    from oma_host.core.plugins import check_agent_config

    if not isinstance(item, dict):
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
