"""The environment a ``shell`` command runs with: the host's, without its secrets.

The host's environment holds what the user's tools need (the search path,
the locale, an SSH agent's socket, a virtual environment, a JDK, proxies)
and what no command should see: provider keys, AWS credentials, tokens of
MCP servers and of whatever started the host. A command gets every variable
but those (as Codex's default shell policy passes all but key, secret and
token names): every secret variable a provider declares
(:func:`oma_host.core.provider_facts.every_secret_variable`, the one list
that redaction reads too), any ``AWS_*`` variable, any name that looks
secret (:func:`oma_host.core.redact.is_secret_name`), any value holding one
of the agent's secret values (its key wherever it came from, its MCP
servers' secret variables and headers: ``AgentConfig.secrets``), and any
URL carrying a password (a proxy's ``user:password@``).

In the editor's terminal (ACP ``terminal/create``) the command gets the
editor's environment, not the host's: there the host's secret variables are
passed empty (:func:`blanked_variables`), which is the nearest ACP comes to
unsetting them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from oma_host.core.provider_facts import every_secret_variable
from oma_host.core.redact import is_secret_name

# A URL with a password in it: scheme://user:password@host.
_URL_PASSWORD = re.compile(r"://[^/@\s:]*:[^/@\s]*@")


# Names that look secret (an AUTH in them) and are not: a socket's path, whose
# agent answers the user's own processes alone; git over SSH needs it.
_NOT_SECRETS = frozenset({"SSH_AUTH_SOCK"})


def _withheld(name: str, value: str, secrets: tuple[str, ...]) -> bool:
    """Whether a variable of the host's is withheld from commands."""
    return (
        name in every_secret_variable()
        or name.upper().startswith("AWS_")
        or (is_secret_name(name) and name not in _NOT_SECRETS)
        or any(secret in value for secret in secrets)
        or _URL_PASSWORD.search(value) is not None
    )


def shell_environment(
    host: Mapping[str, str], secrets: Iterable[str] = (), **extra: str
) -> dict[str, str]:
    """The variables of ``host`` a command may see (see the module docstring),
    with ``extra`` over them."""
    held = tuple(secret for secret in secrets if secret)
    passed = {name: value for name, value in host.items() if not _withheld(name, value, held)}
    passed.update(extra)
    return passed


def blanked_variables(host: Mapping[str, str]) -> list[str]:
    """The secret variables to pass empty to a command the host does not
    start (the editor's terminal): every provider's, and any of ``host``'s
    whose name is ``AWS_*`` or looks secret."""
    names = dict.fromkeys(every_secret_variable())
    for name in host:
        if name.upper().startswith("AWS_") or is_secret_name(name):
            names.setdefault(name, None)
    return list(names)
