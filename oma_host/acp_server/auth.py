"""The ACP door's auth methods and its ``auth_required`` error: the
``initialize`` answer offering the reading's methods (:mod:`.agents`), and
the -32000 that sends the editor to its login when a key is missing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oma_host.acp_server.handshake import env_var_method, initialize_result

if TYPE_CHECKING:
    from acp import RequestError

    from oma_host.core.provider_facts import AuthMethod


def env_var_methods(methods: dict[str, AuthMethod]) -> list[dict[str, Any]]:
    """``methods`` (by id, as the agents' reading gives them) in wire form."""
    return [env_var_method(m.required, m.optional, m.public) for m in methods.values()]


def initialize_answer(
    methods: dict[str, AuthMethod], capabilities: dict[str, Any]
) -> dict[str, Any]:
    """The ``initialize`` result for agents whose keys can come from
    ``methods`` and a client with ``capabilities``."""
    return initialize_result(env_var_methods(methods), capabilities)


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
