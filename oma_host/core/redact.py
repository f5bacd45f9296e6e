"""The one redaction function: secrets never reach results, progress, logs,
stderr excerpts or records.

A leaf of the core: which values are secret is the config's to say
(``AgentConfig.secrets``); this module only takes them out."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any, Protocol

REDACTED = "[redacted]"

# Shapes of credentials worth hiding even when we were never told the value.
# Only the ``secret`` group is replaced, so ``"apiKey": "..."`` stays valid JSON.
_PATTERNS = re.compile(
    r"(?P<a>)(?P<secret_a>sk-(?:ant-)?[A-Za-z0-9_\-]{16,})"  # Anthropic / OpenAI style keys
    r"|(?P<b>(?i:bearer)\s+)(?P<secret_b>[A-Za-z0-9._\-]{16,})"  # Authorization headers
    r"|(?P<c>(?i:x-api-key|api[_-]?key)[\"']?\s*[:=]\s*[\"']?)(?P<secret_c>[A-Za-z0-9._\-+/=]{8,})"
)


def _keep_prefix(match: re.Match[str]) -> str:
    prefix = match.group("a") or match.group("b") or match.group("c") or ""
    return prefix + REDACTED


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def is_secret_name(name: str) -> bool:
    """Environment variable names whose values we treat as secrets."""
    return bool(_SECRET_NAME.search(name))


class HasSecrets(Protocol):
    """What holds a run's secret values: an AgentConfig (see
    :attr:`oma_host.core.config.AgentConfig.secrets`)."""

    @property
    def secrets(self) -> tuple[str, ...]: ...


def config_secrets(config: HasSecrets) -> tuple[str, ...]:
    """The secret values a run of this agent can meet, computed once per
    config (its key wherever it comes from; for an external backend, the
    secret-looking variables of its environment)."""
    return config.secrets


class Redactor:
    """Replaces known secret values and, unless told not to, credential-shaped
    strings."""

    def __init__(self, secrets: Iterable[str] = (), *, patterns: bool = True) -> None:
        # Longest first, so a secret containing another is replaced whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self._patterns = patterns

    @classmethod
    def for_config(cls, config: HasSecrets) -> Redactor:
        return cls(config.secrets)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _PATTERNS.sub(_keep_prefix, text) if self._patterns else text

    def redact_tree(self, value: Any) -> Any:
        """A copy of JSON data with every string redacted (keys kept), so the
        result serialises to valid JSON, unlike redacting serialised text."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self.redact_tree(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact_tree(item) for item in value]
        return value


class RedactingFilter(logging.Filter):
    """Applied to the stderr log handler: a log line (``--log-level DEBUG``
    logs whole message bodies) never carries a credential-shaped string."""

    def __init__(self) -> None:
        super().__init__()
        self._redactor = Redactor()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = self._redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
