"""The one redaction module: secrets never reach results, progress, logs,
stderr excerpts, traces, stored sessions or evaluation records.

Two kinds of secret are taken out. An agent's own secret values (its key,
wherever it came from: ``AgentConfig.secrets``) are replaced wherever they
appear, always. Credential-shaped strings are replaced unless a caller keeps
the payload as given (evaluation's ``storePayloads: "full"``):

- PEM private key blocks (also one cut before its END line);
- ``Authorization:`` header values, whatever the scheme (``Basic``, ``Bearer``,
  ``token``...), and ``Bearer`` tokens anywhere;
- the values of secret-looking names (``password``, ``passwd``, ``secret``,
  ``token``, ``api_key``, ``private_key``, ``access_key``, ``credentials``, also
  ending a longer name such as ``client_secret`` or ``GITHUB_TOKEN``) in the
  forms ``name=value``, ``name: value`` and ``"name": "value"``;
- Anthropic / OpenAI keys (``sk-...``), GitHub tokens (``ghp_``, ``gho_``,
  ``ghs_``, ``ghu_``, ``ghr_``, ``github_pat_``), AWS access key ids (``AKIA...``,
  ``ASIA...``), Slack tokens (``xoxb-``...) and JWTs (``eyJ...``, three
  dot-separated parts).

A leaf of the core: which values are secret is the config's to say; this
module only takes them out."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

REDACTED = "[redacted]"

_START = r"(?<![A-Za-z0-9_\-])"  # a token starts here, not inside a longer word
# A value after ``name=``, ``name: `` or ``"name": ``: up to its closing quote
# (also an escaped one: JSON inside JSON), else up to a delimiter. It never
# starts with ``[``, so ``[redacted]`` is not redacted again.
_VALUE = (
    r"(?:(?<=\")(?:[^\"\\\n]|\\[^\"\n])+"
    r"|(?<=')[^'\n]+"
    r"|[^\s\"'`,;&()<>{}\[\]\\]+)"
)
_ASSIGN = r"\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?"
_SCHEME = r"(?i:basic|bearer|digest|token)[ \t]+"
# Each rule replaces only its group ``s``, so ``"password": "..."`` stays
# valid JSON. Every rule's match starts with one of _ANCHORS (case aside).
_RULES = (
    r"(?P<s>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
    r"(?s:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*))",
    r"(?i:authorization)" + _ASSIGN + r"(?!(?:" + _SCHEME + r")?\[)(?:" + _SCHEME + ")?"
    r"(?P<s>" + _VALUE + ")",
    r"(?i:\bbearer)[ \t]+(?P<s>[A-Za-z0-9._~+/=\-]{16,})",
    r"(?i:passw(?:or)?d|secret|token|api[_\-]?key|private[_\-]?key|access[_\-]?key"
    r"|credentials?)" + _ASSIGN + r"(?P<s>" + _VALUE + ")",
    r"(?<![A-Za-z0-9])(?P<s>sk-(?:ant-)?[A-Za-z0-9_\-]{16,})",
    _START + r"(?P<s>gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    r"(?<![A-Za-z0-9])(?P<s>(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9])",
    _START + r"(?P<s>xox[a-z]-[A-Za-z0-9\-]{10,})",
    _START + r"(?P<s>eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+)",
)
_ANCHORS = (
    "-----begin ",
    "authorization",
    "bearer",
    "passw",
    "secret",
    "token",
    "api",
    "private",
    "access",
    "credential",
    "sk-",
    "gh",
    "github_pat_",
    "akia",
    "asia",
    "xox",
    "eyj",
)
# All rules in one pattern: rule i is group ``r{i}`` holding its secret as
# ``s{i}``. ASCII case folding only, as for the anchors.
_PATTERNS = re.compile(
    "|".join(
        f"(?P<r{index}>{rule.replace('(?P<s>', f'(?P<s{index}>')})"
        for index, rule in enumerate(_RULES)
    ),
    re.ASCII,
)


def _replace(match: re.Match[str]) -> str:
    # The rule's own group closes last, so it is the match's last group.
    secret = "s" + str(match.lastgroup)[1:]
    text, (start, end) = match.string, match.span()
    return text[start : match.start(secret)] + REDACTED + text[match.end(secret) : end]


def _anchor_positions(lowered: str) -> Iterator[int]:
    for anchor in _ANCHORS:
        position = lowered.find(anchor)
        while position != -1:
            yield position
            position = lowered.find(anchor, position + 1)


def redact_patterns(text: str) -> str:
    """``text`` with every credential-shaped string replaced.

    The same as ``_PATTERNS.sub``, only fast: the pattern is tried only where
    an anchor occurs (found by ``str.find``), not at every position, which
    matters for a 20 MB base64 image in a stored session or a trace."""
    lowered = text.lower()
    if len(lowered) != len(text):  # a few letters lower to two characters
        return _PATTERNS.sub(_replace, text)
    pieces: list[str] = []
    done = 0
    for start in sorted(set(_anchor_positions(lowered))):
        if start < done:
            continue
        match = _PATTERNS.match(text, start)
        if match is not None:
            pieces += (text[done:start], _replace(match))
            done = match.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


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

    @property
    def values(self) -> tuple[str, ...]:
        """The secret values it replaces, longest first."""
        return tuple(self._secrets)

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return redact_patterns(text) if self._patterns else text

    def keeps(self, text: str) -> bool:
        """Whether :meth:`redact` returns ``text`` unchanged, where that is
        quick to tell: True when no secret value is in it and patterns are
        off; False otherwise (also when redacting might change nothing)."""
        if self._patterns:
            return False
        for secret in self._secrets:  # noqa: SIM110 (a loop: all() over a generator costs more, per delta)
            if secret in text:
                return False
        return True

    def redact_tree(self, value: Any) -> Any:
        """A copy of JSON data with every string redacted (keys kept), so the
        result serialises to valid JSON, unlike redacting serialised text."""
        if type(value) is dict and self._keeps_values(value):
            return value.copy()  # a stream event of strings (a delta) most often
        return self._redact_tree(value)

    def redact_owned(self, value: Any) -> Any:
        """:meth:`redact_tree` for data the caller owns and hands over (a run's
        fresh result): the same object back when no string in it holds a
        secret value and patterns are off, which is what a run's result
        almost always is; else a redacted copy."""
        if self._patterns or self._holds_secret(value):
            return self._redact_tree(value)
        return value

    def _holds_secret(self, value: Any) -> bool:
        """Whether a secret value occurs in any string of ``value`` (keys
        aside): one walk without copying, a loop rather than recursion."""
        secrets = self._secrets
        pending = [value]
        while pending:  # the values _redact_tree walks, in any order
            item = pending.pop()
            if isinstance(item, str):
                for secret in secrets:  # a loop: any() and a generator cost more, per string
                    if secret in item:
                        return True
            elif isinstance(item, dict):
                pending.extend(item.values())
            elif isinstance(item, list):
                pending.extend(item)
        return False

    def _keeps_values(self, value: dict[Any, Any]) -> bool:
        """Whether every value of ``value`` is a string :meth:`keeps`."""
        if self._patterns:
            return False
        secrets = self._secrets
        for item in value.values():
            if type(item) is not str:
                return False
            for secret in secrets:
                if secret in item:
                    return False
        return True

    def _redact_tree(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {key: self._redact_tree(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._redact_tree(item) for item in value]
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
