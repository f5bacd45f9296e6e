"""The ACP bridge: an ACP agent (Claude Code, Gemini CLI...) as an oma-host backend.

The ACP library is loaded through :mod:`oma_host.wire.acp_library` before any
module here imports it.
"""

from oma_host.wire import acp_library as acp_library
