"""``oma-host --trace FILE``: every frame in and out, with a timestamp, one
JSON object per line, for bug reports.

Keys never reach the file: values of ``apiKey`` fields and of secret-looking
names in ``env`` objects are replaced before writing, and the line then goes
through the credential patterns of :mod:`oma_host.core.redact`, string by string
(so every line stays valid JSON).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, TextIO

from oma_host.core.redact import REDACTED, Redactor, is_secret_name

_PATTERNS = Redactor()
# Fields that carry a key (AgentConfig accepts both spellings).
_KEY_FIELDS = {"apiKey", "api_key"}


def _scrub(value: Any) -> Any:
    if isinstance(value, dict):
        clean: dict[str, Any] = {}
        for key, item in value.items():
            if key in _KEY_FIELDS and isinstance(item, str):
                clean[key] = REDACTED
            elif key == "env" and isinstance(item, dict):
                clean[key] = {
                    name: REDACTED if is_secret_name(str(name)) else _scrub(val)
                    for name, val in item.items()
                }
            else:
                clean[key] = _scrub(item)
        return clean
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value


class FrameTracer:
    """Appends trace lines to a file; safe to share between sessions."""

    def __init__(self, path: str) -> None:
        self._file: TextIO = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._redactor = _PATTERNS

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """Values to hide from now on (an agent's key, wherever it appears)."""
        new = set(secrets) - self._secrets
        if new:
            self._secrets |= new
            self._redactor = Redactor(self._secrets)

    def record(self, direction: str, message: Any = None, error: str | None = None) -> None:
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "direction": direction,
        }
        if error is not None:
            entry["error"] = error
        else:
            entry["message"] = _scrub(message)
        line = json.dumps(self._redactor.redact_tree(entry), ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")

    def record_body(self, direction: str, body: bytes) -> None:
        try:
            self.record(direction, json.loads(body))
        except ValueError:
            self.record(direction, error=body[:2000].decode(errors="replace"))

    def close(self) -> None:
        with self._lock:
            self._file.close()
