"""The ACP door's auth methods and its ``auth_required`` error.

The ``initialize`` answer offers the methods of the one reading at start
(:mod:`.agents`); ``auth_required`` (-32000) sends the editor to its login
when a session's agent has no key or its provider refused it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oma_host.acp_server.handshake import initialize_result

if TYPE_CHECKING:
    from acp import RequestError


def initialize_answer(
    methods: dict[str, dict[str, Any]], capabilities: dict[str, Any]
) -> dict[str, Any]:
    """The ``initialize`` result for agents whose keys can come from
    ``methods`` (by id, as the agents' reading gives them) and a client
    with ``capabilities``."""
    return initialize_result(list(methods.values()), capabilities)


def required_variables(method: dict[str, Any]) -> list[str]:
    """The variables an ``env_var`` method (wire form) needs set for
    ``authenticate`` to succeed."""
    return [var["name"] for var in method["vars"] if not var.get("optional")]


# What a credential error adds: how to give oma-host a key.
LOGIN_HINT = (
    "log in with the editor's login for oma-host or `oma-host login` in a terminal, "
    "or set the variable in the environment the editor starts oma-host with"
)


def auth_required(problem: str) -> RequestError:
    """ACP's ``auth_required`` (-32000) for a credential ``problem`` (which
    names the provider and its variables), saying how to log in: editors
    open their login on this code."""
    # The door's, loaded after ``initialize`` is answered.
    from oma_host.wire.acp_library import acp

    message = f"{problem.rstrip('.')}; {LOGIN_HINT}"
    return acp.RequestError(-32000, message, {"type": "AuthRequired", "kind": "auth"})
