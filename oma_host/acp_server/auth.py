"""Which ACP auth methods the door's agents need, and the ``auth_required`` error.

Worked out from the checked configs: each LLM agent's key variables, offered in
the ``initialize`` answer and checked by ``authenticate``; ``auth_required``
(-32000) sends the editor to its login when a session's agent has no key or its
provider refused it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oma_host.acp_server.handshake import env_var_method, initialize_result
from oma_host.core.config import AgentConfig
from oma_host.core.provider_facts import DEFAULT_PROVIDER, AuthMethod, facts_of

if TYPE_CHECKING:
    from acp import RequestError


def auth_methods_of(config: AgentConfig) -> tuple[AuthMethod, ...]:
    """The ways an LLM agent's key can reach it from the environment: the
    ``apiKeyEnv`` variable, else its provider's."""
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


def initialize_answer(configs: list[AgentConfig], capabilities: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result for ``configs`` and a client with ``capabilities``."""
    methods = env_auth_methods(configs).values()
    return initialize_result(
        [env_var_method(m.required, m.optional, m.public) for m in methods], capabilities
    )


# What a credential error adds: how to give oma-host a key.
LOGIN_HINT = (
    "log in with the editor's login for oma-host or `oma-host login` in a terminal, "
    "or set the variable in the environment the editor starts oma-host with"
)


def auth_required(problem: str) -> RequestError:
    """ACP's ``auth_required`` (-32000) for a credential ``problem`` (which
    names the provider and its variables), saying how to log in: editors
    open their login on this code."""
    from acp import RequestError  # the door's, loaded after ``initialize`` is answered

    message = f"{problem.rstrip('.')}; {LOGIN_HINT}"
    return RequestError(-32000, message, {"type": "AuthRequired", "kind": "auth"})
