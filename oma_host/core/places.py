"""Where oma-host keeps the user's own files, in a module that imports only
``os``, so the ACP door's early answer (:mod:`oma_host.acp_server.early`)
finds them as the rest of the host does."""

from __future__ import annotations

import os


def config_dir() -> str:
    """``$XDG_CONFIG_HOME/oma-host`` (``~/.config/oma-host`` by default): the
    agents file, the user's slash commands and the keys ``oma-host login`` keeps."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "oma-host")
