"""The one redaction function: secrets never reach results, progress, logs,
stderr excerpts or records."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oma_host.config import AgentConfig

REDACTED = "[redacted]"

# Shapes of credentials worth hiding even when we were never told the value.
_PATTERNS = re.compile(
    r"(sk-(?:ant-)?[A-Za-z0-9_\-]{16,})"  # Anthropic / OpenAI style keys
    r"|((?i:bearer)\s+[A-Za-z0-9._\-]{16,})"  # Authorization headers
    r"|((?i:x-api-key|api[_-]?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9._\-]{8,})"
)

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Environment variable names whose values we treat as secrets."""
    return bool(_SECRET_NAME.search(name))


def config_secrets(config: AgentConfig) -> tuple[str, ...]:
    """The secret values an agent config carries: its key and the values of
    backend environment variables with secret-looking names."""
    secrets: list[str] = []
    if config.api_key:
        secrets.append(config.api_key)
    if config.backend is not None:
        secrets.extend(v for k, v in config.backend.env.items() if is_secret_name(k))
    return tuple(secrets)


class Redactor:
    """Replaces known secret values and, unless told not to, credential-shaped
    strings."""

    def __init__(self, secrets: Iterable[str] = (), *, patterns: bool = True) -> None:
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self._patterns = patterns

    @classmethod
    def for_config(cls, config: AgentConfig) -> Redactor:
        return cls(config_secrets(config))

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _PATTERNS.sub(REDACTED, text) if self._patterns else text


class RedactingFilter(logging.Filter):
    """Applied to the stderr log handler: a log line (pygls logs whole message
    bodies at DEBUG) never carries a credential-shaped string."""

    def __init__(self) -> None:
        super().__init__()
        self._redactor = Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self._redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
