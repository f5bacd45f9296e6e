"""``oma-host login`` and ``oma-host logout``: keep a provider's key for both doors.

So an editor that starts oma-host without the key in its environment still has
it (:mod:`oma_host.core.credentials`). The key is read without echo, or one
line of stdin with no terminal. ``oma-host acp login`` is the ACP door's
``terminal`` auth method: a zero exit means logged in.
"""

from __future__ import annotations

import getpass
import sys
from typing import TextIO

from oma_host.core.credentials import file_path, forget_key, forget_stored_keys, store_key
from oma_host.core.places import FolderError
from oma_host.core.provider_facts import ProviderFacts, offered_providers

# The exit status of a usage error, as argparse gives it.
USAGE_ERROR = 2


def login_providers() -> list[ProviderFacts]:
    """The providers a key can be stored for: offered, with a key variable."""
    return [facts for facts in offered_providers() if facts.key_variables]


def _choose(providers: list[ProviderFacts], out: TextIO) -> ProviderFacts | None:
    out.write("Log in to a provider; oma-host keeps its key for both doors.\n")
    for number, facts in enumerate(providers, 1):
        out.write(f"  {number}. {facts.title} ({facts.key_variables[0]})\n")
    answer = input(f"Provider [1-{len(providers)}]: ").strip()
    by_name = {facts.name: facts for facts in providers}
    if answer in by_name:
        return by_name[answer]
    if answer.isdigit() and 1 <= int(answer) <= len(providers):
        return providers[int(answer) - 1]
    out.write(f"{answer!r} is none of 1 to {len(providers)} or a provider's name\n")
    return None


def run_login(provider: str | None, out: TextIO = sys.stderr) -> int:
    """Store a key; 0 when stored, 1 when none was given, 2 for a bad provider
    or a config folder that is not the user's own."""
    providers = login_providers()
    interactive = sys.stdin.isatty()
    facts: ProviderFacts | None
    if provider is not None:
        facts = next((f for f in providers if f.name == provider), None)
        if facts is None:
            names = ", ".join(f.name for f in providers)
            out.write(f"oma-host login: unknown provider {provider!r} (one of {names})\n")
            return USAGE_ERROR
    elif not interactive:
        out.write("oma-host login: --provider is needed when stdin is not a terminal\n")
        return USAGE_ERROR
    else:
        facts = _choose(providers, out)
        if facts is None:
            return USAGE_ERROR
    variable = facts.key_variables[0]
    if interactive:
        key = getpass.getpass(f"{facts.title} key ({variable}; not shown): ", stream=out)
    else:
        key = sys.stdin.readline()
    key = key.strip()
    if not key:
        out.write("oma-host login: no key given; nothing stored\n")
        return 1
    try:
        where = store_key(variable, key)
    except FolderError as error:
        out.write(f"oma-host login: nothing stored: {error}\n")
        return USAGE_ERROR
    place = (
        "the OS keyring (service oma-host)"
        if where == "keyring"
        else f"{file_path()} (readable by you alone)"
    )
    out.write(f"Stored the {facts.title} key in {place}; used when {variable} is not set.\n")
    return 0


def run_logout(provider: str | None, out: TextIO = sys.stderr) -> int:
    """Remove the stored key of ``provider``, or every stored key."""
    providers = {facts.name: facts for facts in login_providers()}
    if provider is not None and provider not in providers:
        out.write(
            f"oma-host logout: unknown provider {provider!r} (one of {', '.join(providers)})\n"
        )
        return USAGE_ERROR
    if provider is None:
        removed = forget_stored_keys()
    else:
        variable = providers[provider].key_variables[0]
        removed = [variable] if forget_key(variable) else []
    if removed:
        out.write(f"Removed the stored key of {', '.join(removed)}.\n")
    else:
        out.write("No stored key to remove.\n")
    return 0
