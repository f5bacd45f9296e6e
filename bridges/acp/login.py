"""Logging an ACP agent in: which of its ``authMethods`` to ``authenticate`` with, when asked.

The one ``backend.auth`` names, else the only ``env_var`` method whose
variables are all set. ``agent`` and ``terminal`` methods are never picked on
their own, since oma-host cannot tell whether they would succeed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _needs(method: dict[str, Any]) -> list[str]:
    """The variables an ``env_var`` method requires (optional ones left out)."""
    if method.get("type") != "env_var":
        return []
    return [
        str(var.get("name"))
        for var in method.get("vars") or []
        if isinstance(var, dict) and not var.get("optional")
    ]


def describe(methods: list[dict[str, Any]]) -> str:
    """``id (name: needs A, B)``, comma-separated: what a user can set."""
    parts = []
    for method in methods:
        needs = _needs(method)
        what = str(method.get("name") or method.get("id"))
        if needs:
            what += ": set " + ", ".join(needs)
        elif method.get("type") == "terminal":
            what += ": an interactive login"
        parts.append(f"{method.get('id')} ({what})")
    return ", ".join(parts) or "none listed"


def choose(methods: list[dict[str, Any]], wanted: str | None, env: Mapping[str, str]) -> str | None:
    """The methodId to authenticate with, or None when none is usable. A
    ``wanted`` id the agent does not list is not used."""
    ids = [str(method.get("id")) for method in methods]
    if wanted is not None:
        return wanted if wanted in ids else None
    ready = [
        str(method.get("id"))
        for method in methods
        if (needs := _needs(method)) and all(env.get(name) for name in needs)
    ]
    return ready[0] if len(ready) == 1 else None
