"""The ACP door's ``initialize`` answer, built as wire data with nothing of
the ``agent-client-protocol`` library imported: editors spawn the door and
wait for this answer, and importing the library's schema costs more than
everything else the door does before it. The rest of the door (and the
library) is imported once the answer is written (:mod:`.serve`).

:func:`plain_initialize` takes the params only in the plain shape clients
send (the capabilities this door reads, as booleans); anything else goes
through the schema's ``InitializeRequest`` (:mod:`.routes`), so a malformed
request still gets its -32602 with the model's errors. Both paths answer with
:func:`initialize_answer`, which a test holds equal to the library's
``InitializeResponse`` dump.
"""

from __future__ import annotations

from typing import Any

from oma_host.core.config import AgentConfig
from oma_host.core.provider_facts import DEFAULT_PROVIDER, AuthMethod, facts_of
from oma_host.core.version import __version__

# The ACP version the door speaks (the library's PROTOCOL_VERSION; a test
# holds them equal).
PROTOCOL_VERSION = 1
_UINT16 = 65_535

# The requests the door serves (:func:`.routes.door_routes`' table, which a
# test holds equal), known before the door is imported: a request for any
# other method is answered -32601 at once.
SERVED_REQUESTS = frozenset(
    {
        "initialize",
        "authenticate",
        "session/new",
        "session/load",
        "session/list",
        "session/resume",
        "session/fork",
        "session/close",
        "session/delete",
        "session/prompt",
        "session/set_config_option",
        "session/set_mode",
    }
)

# The terminal auth method: the editor runs ``oma-host acp login`` in a
# terminal (its launch command with these args), which stores a key.
LOGIN_METHOD: dict[str, Any] = {
    "id": "oma-host-login",
    "name": "Log in with a provider key",
    "description": "Choose a provider and paste its key; oma-host keeps it in the OS keyring "
    "(else a file only you can read) and reads it when the key's variable is not set",
    "args": ["login"],
    "type": "terminal",
}

_BOOLEAN_GROUPS = {"fs": {"readTextFile", "writeTextFile"}, "auth": {"terminal"}}


def _plain_capabilities(capabilities: Any) -> bool:
    if type(capabilities) is not dict:
        return False
    for key, value in capabilities.items():
        if key == "terminal":
            if type(value) is not bool:
                return False
        elif key in _BOOLEAN_GROUPS:
            if type(value) is not dict or not value.keys() <= _BOOLEAN_GROUPS[key]:
                return False
            if any(type(flag) is not bool for flag in value.values()):
                return False
        else:
            return False
    return True


def _plain_client_info(info: Any) -> bool:
    return (
        type(info) is dict
        and info.keys() <= {"name", "version", "title"}
        and {"name", "version"} <= info.keys()
        and all(type(value) is str for value in info.values())
    )


def plain_initialize(params: Any) -> dict[str, Any] | None:
    """The client capabilities of an ``initialize`` in the plain shape
    (``protocolVersion`` an int, capabilities of booleans this door reads,
    ``clientInfo`` of strings), or None for anything else."""
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientCapabilities",
        "clientInfo",
    }:
        return None
    version = params.get("protocolVersion")
    if type(version) is not int or not 0 <= version <= _UINT16:
        return None
    capabilities = params.get("clientCapabilities", {})
    if not _plain_capabilities(capabilities):
        return None
    if "clientInfo" in params and not _plain_client_info(params["clientInfo"]):
        return None
    plain: dict[str, Any] = capabilities
    return plain


def auth_methods_of(config: AgentConfig) -> tuple[AuthMethod, ...]:
    """The ways an LLM agent's key can reach it from the environment: the
    ``apiKeyEnv`` variable, else its provider's (:mod:`oma_host.core.provider_facts`)."""
    if config.api_key_env:
        return (AuthMethod((config.api_key_env,)),)
    # The agents file was checked against the offered providers when loaded.
    return facts_of(config.provider or DEFAULT_PROVIDER).auth_methods


def env_auth_methods(configs: list[AgentConfig]) -> dict[str, AuthMethod]:
    """Every LLM agent's auth methods, by id (an agent with ``apiKey`` needs none)."""
    methods = {
        method.id: method
        for config in configs
        if config.backend is None and not config.api_key
        for method in auth_methods_of(config)
    }
    return dict(sorted(methods.items()))


def _wire_method(method: AuthMethod) -> dict[str, Any]:
    """The ACP ``env_var`` form of ``method``."""
    names = " and ".join(f"${name}" for name in method.required)
    what = "key" if len(method.required) == 1 else "credentials"
    variables: list[dict[str, Any]] = [
        {"name": name, "secret": name not in method.public} for name in method.required
    ]
    variables += [{"name": name, "secret": True, "optional": True} for name in method.optional]
    return {
        "id": method.id,
        "name": " and ".join(method.required),
        "description": f"oma-host reads the provider {what} from {names}",
        "vars": variables,
        "type": "env_var",
    }


def initialize_answer(configs: list[AgentConfig], capabilities: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result for a client with ``capabilities`` (wire
    form): the door's capabilities, its auth methods (the ``terminal`` login
    first, to a client that runs terminal logins, as ACP requires) and who
    it is."""
    methods = [_wire_method(method) for method in env_auth_methods(configs).values()]
    auth = capabilities.get("auth")
    if methods and isinstance(auth, dict) and auth.get("terminal") is True:
        methods.insert(0, LOGIN_METHOD)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {
                "list": {},
                "delete": {},
                "fork": {},
                "resume": {},
                "close": {},
            },
        },
        "authMethods": methods,
        "agentInfo": {"name": "oma-host", "title": "oma-host", "version": __version__},
    }
