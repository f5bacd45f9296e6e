"""The environment a ``shell`` command runs with: the host's, without its secrets.

A command gets every variable the user's tools need but those :func:`withheld`
decides: provider secrets, ``AWS_*``, secret-looking names, values holding the
agent's secrets or shaped like credentials, URLs with a password. In the
editor's terminal, where ACP cannot unset a variable, those are passed empty
(:func:`blanked_variables`). docs/tools.md, "Shell".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from oma_host.core.provider_facts import every_secret_variable
from oma_host.core.redact import is_secret_name, redact_patterns

# A URL with a password in it: scheme://user:password@host.
_URL_PASSWORD = re.compile(r"://[^/@\s:]*:[^/@\s]*@")


# Names that look secret (an AUTH in them) and are not: a socket's path, whose
# agent answers the user's own processes alone; git over SSH needs it.
_NOT_SECRETS = frozenset({"SSH_AUTH_SOCK"})


def withheld(name: str, value: str, secrets: tuple[str, ...]) -> bool:
    """Whether a variable of the host's is kept from commands, given the
    agent's secret values (see the module docstring)."""
    return (
        name in every_secret_variable()
        or name.upper().startswith("AWS_")
        or (is_secret_name(name) and name not in _NOT_SECRETS)
        or any(secret in value for secret in secrets)
        or _URL_PASSWORD.search(value) is not None
        or redact_patterns(value) != value
    )


def _held(secrets: Iterable[str]) -> tuple[str, ...]:
    return tuple(secret for secret in secrets if secret)


def shell_environment(
    host: Mapping[str, str], secrets: Iterable[str] = (), **extra: str
) -> dict[str, str]:
    """The variables of ``host`` a command may see (see the module docstring),
    with ``extra`` over them."""
    held = _held(secrets)
    passed = {name: value for name, value in host.items() if not withheld(name, value, held)}
    passed.update(extra)
    return passed


def blanked_variables(host: Mapping[str, str], secrets: Iterable[str] = ()) -> list[str]:
    """The variables to pass empty to a command the host does not start (the
    editor's terminal): every provider's secret variable, and every variable
    of ``host`` that :func:`shell_environment` would keep from a command."""
    held = _held(secrets)
    names = dict.fromkeys(every_secret_variable())
    for name, value in host.items():
        if withheld(name, value, held):
            names.setdefault(name, None)
    return list(names)
