"""Where oma-host keeps the user's own files, in a module that imports only
``os``, so the ACP door's early answer (:mod:`oma_host.acp_server.early`)
finds them as the rest of the host does."""

from __future__ import annotations

import os

# The agents file this process's ACP door serves (``--agents``), once it is read.
_served_agents_file: str | None = None


def config_dir() -> str:
    """``$XDG_CONFIG_HOME/oma-host`` (``~/.config/oma-host`` by default): the
    agents file, the user's slash commands and the keys ``oma-host login`` keeps."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "oma-host")


def serve_agents_file(path: str | None) -> None:
    """Record ``path`` as the agents file this process serves (None: the
    default one, in :func:`config_dir`), for :func:`own_config`."""
    global _served_agents_file
    _served_agents_file = None if path is None else os.path.abspath(path)


def own_config() -> tuple[str, ...]:
    """The host's own configuration, as real absolute paths: the folder
    :func:`config_dir` and the agents file the ACP door serves. The
    permission policy lets no tool change them unasked."""
    places = [config_dir()]
    if _served_agents_file is not None:
        places.append(_served_agents_file)
    return tuple(os.path.realpath(place) for place in places)
