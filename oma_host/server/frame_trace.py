"""``oma-host --trace FILE``: every frame in and out, timestamped, one JSON object a line.

Frames for bug reports, not the runs' spans (:mod:`oma_host.core.spans`). Keys
never reach the file: key fields, secret-looking variables and header values
are replaced wherever they appear; the file is 0600, and nothing the tracer
meets ends the host.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from oma_host.core.redact import Redactor, is_secret_name, scrub_credentials

log = logging.getLogger("oma_host.server")


class TraceFileError(PermissionError):
    """A --trace file that belongs to another user."""


def _open_own(path: str) -> int:
    """Open ``path`` for appending (created 0600); refused unless this user owns it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    owner = os.fstat(fd).st_uid
    if owner != os.getuid():
        os.close(fd)
        raise TraceFileError(
            f"--trace {path}: the file belongs to another user (uid {owner}); refusing to write it"
        )
    return fd


class FrameTracer:
    """Appends trace lines to a file; safe to share between sessions.

    Keys never reach the file. Values of ``apiKey`` and ``authToken`` fields,
    of secret-looking names in ``env`` objects and in MCP servers' ``env``
    lists of ``{name, value}``, and every value of their ``headers`` lists and
    of a ``headers`` object (``initializationOptions.telemetry``'s; a header
    carries a token whatever its name) are replaced before writing; the values
    they hold, the variable an ``apiKeyEnv`` names, and every secret-looking
    variable of the host's environment are secrets from then on, replaced
    wherever they appear, also in the same frame's input (a frame is traced
    before its config is parsed). The line then goes through the credential
    patterns of :mod:`oma_host.core.redact`, string by string, so every line
    stays valid JSON.

    The file is created 0600, and one that belongs to another user is refused.
    Nothing the tracer meets ends the host: a lone surrogate is written as its
    JSON escape, and a frame that cannot be traced is logged instead."""

    def __init__(self, path: str) -> None:
        # backslashreplace: a lone surrogate (valid in JSON, not in UTF-8) can
        # only stand inside a JSON string, where its escape is what it means.
        self._file = os.fdopen(
            _open_own(path), "a", encoding="utf-8", errors="backslashreplace", buffering=1
        )
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._redactor = Redactor()
        self.add_secrets(value for name, value in os.environ.items() if is_secret_name(name))

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """Values to hide from now on (an agent's key, wherever it appears)."""
        new = {secret for secret in secrets if secret} - self._secrets
        if new:
            self._secrets |= new
            self._redactor = Redactor(self._secrets)

    def record(self, direction: str, message: Any = None, error: str | None = None) -> None:
        """Trace one frame; never raises."""
        try:
            line = self._line(direction, message, error)
        except Exception as failure:  # RecursionError, a value json cannot write
            log.warning("--trace: a frame could not be traced: %r", failure)
            line = self._line(direction, error=f"this frame could not be traced: {failure!r}")
        try:
            with self._lock:
                self._file.write(line + "\n")
        except (OSError, ValueError) as failure:  # a full disk, a closed file
            log.warning("--trace: writing the trace failed: %s", failure)

    def _line(self, direction: str, message: Any = None, error: str | None = None) -> str:
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "direction": direction,
        }
        if error is not None:
            entry["error"] = error
        else:
            entry["message"], found = scrub_credentials(message)
            self.add_secrets(found)
        return json.dumps(self._redactor.redact_tree(entry), ensure_ascii=False)

    def record_body(self, direction: str, body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            self.record(direction, error=body[:2000].decode(errors="replace"))
            return
        self.record(direction, message)

    def close(self) -> None:
        with self._lock:
            self._file.close()
