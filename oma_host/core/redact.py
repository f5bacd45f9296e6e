"""The one redaction module: secrets never reach results, progress, logs, traces or records.

An agent's own secret values (``AgentConfig.secrets``) are always replaced;
credential-shaped strings (private keys, ``Authorization`` values, values of
secret-looking names, known token formats, JWTs) are too, unless a caller keeps
the payload as given. Which values are secret is the config's to say; this
module only takes them out.
"""

from __future__ import annotations

import heapq
import logging
import os
import re
from collections.abc import Iterable
from typing import Any, Protocol
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

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
# valid JSON.
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
# All rules in one pattern: rule i is group ``r{i}`` holding its secret as
# ``s{i}``. ASCII case folding only. This is what redaction means; the finders
# below only say where it is worth trying.
_PATTERNS = re.compile(
    "|".join(
        f"(?P<r{index}>{rule.replace('(?P<s>', f'(?P<s{index}>')})"
        for index, rule in enumerate(_RULES)
    ),
    re.ASCII,
)

# Where a rule can match, searched for in C. Each finder starts with a literal
# (so the regex engine skips ahead to it with its fast prefix search instead of
# trying every position) and checks enough of what follows that a text made of
# a rule's beginning over and over (``ghgh...``, ``token=\n``...) is refused
# inside the engine, not at a Python step per place. Every position where a
# rule can match is a hit of one of its finders; the full pattern, tried at a
# hit, decides. Finders marked True run over the text with its ASCII letters
# lowered (the rules whose names fold case).
_VALUE_START = r"(?:(?<=\")(?:[^\"\\\n]|\\[^\"\n])|(?<=')[^'\n]|[^\s\"'`,;&()<>{}\[\]\\])"
_TOKEN_PART = r"[A-Za-z0-9_\-]"
_FINDERS: tuple[tuple[str, bool], ...] = (
    (r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----", False),
    (r"authorization" + _ASSIGN, True),
    (r"bearer(?<![a-z0-9_]bearer)[ \t]++[a-z0-9._~+/=\-]{16}", True),
    *(
        (name + _ASSIGN + _VALUE_START, True)
        for name in (
            r"passw(?:or)?d",
            r"secret",
            r"token",
            r"api[_\-]?key",
            r"private[_\-]?key",
            r"access[_\-]?key",
            r"credentials?",
        )
    ),
    (r"sk-(?<![A-Za-z0-9]sk-)(?:ant-)?[A-Za-z0-9_\-]{16}", False),
    (r"gh(?<!" + _TOKEN_PART + r"gh)[pousr]_[A-Za-z0-9]{20}", False),
    (r"github_pat_(?<!" + _TOKEN_PART + r"github_pat_)[A-Za-z0-9_]{20}", False),
    (r"AKIA(?<![A-Za-z0-9]AKIA)[0-9A-Z]{16}(?![A-Za-z0-9])", False),
    (r"ASIA(?<![A-Za-z0-9]ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])", False),
    (r"xox(?<!" + _TOKEN_PART + r"xox)[a-z]-[A-Za-z0-9\-]{10}", False),
    (
        r"eyJ(?<!"
        + _TOKEN_PART
        + r"eyJ)"
        + _TOKEN_PART
        + r"++\."
        + _TOKEN_PART
        + r"++\."
        + _TOKEN_PART,
        False,
    ),
)
_COMPILED_FINDERS = tuple((re.compile(finder, re.ASCII), lowered) for finder, lowered in _FINDERS)


def _replace(match: re.Match[str]) -> str:
    # The rule's own group closes last, so it is the match's last group.
    secret = "s" + str(match.lastgroup)[1:]
    text, (start, end) = match.string, match.span()
    return text[start : match.start(secret)] + REDACTED + text[match.end(secret) : end]


def _ascii_lowered(text: str) -> str:
    """``text`` with its ASCII letters lowered and every other character where
    it was, as the patterns fold case (ASCII only). ``str.lower`` would lower
    other letters too, some into two characters, and builds a four-byte copy
    of a text that is not ASCII; ``bytes.lower`` changes only bytes of ASCII
    capitals, and in UTF-16 a character that is not ASCII keeps a byte that is
    not, so it stays one character that is not ASCII."""
    if text.isascii():
        return text.lower()
    return text.encode("utf-16-le", "surrogatepass").lower().decode("utf-16-le", "surrogatepass")


def redact_patterns(text: str) -> str:
    """``text`` with every credential-shaped string replaced: the same as
    ``_PATTERNS.sub(_replace, text)``, in time linear in the text and with
    memory for one lowered copy of it, whatever the text holds.

    Each finder keeps its next hit in a small heap; the lowest hit at or after
    the end of the last replacement is matched with the full pattern (which
    tries the rules in order, as ``sub`` does there), and a finder whose hit
    fell inside a replacement searches again from its end, in C."""
    lowered = _ascii_lowered(text)
    sources = [lowered if on_lowered else text for _, on_lowered in _COMPILED_FINDERS]
    heap: list[tuple[int, int]] = []
    for index, (finder, _) in enumerate(_COMPILED_FINDERS):
        hit = finder.search(sources[index])
        if hit is not None:
            heap.append((hit.start(), index))
    if not heap:
        return text
    heapq.heapify(heap)
    pieces: list[str] = []  # joined into a chunk now and then: many small strings cost more
    chunks: list[str] = []
    done = 0
    tried = -1  # two finders can hit at one place; the pattern is tried there once
    while heap:
        start, index = heap[0]
        if start >= done and start != tried:
            tried = start
            match = _PATTERNS.match(text, start)
            if match is not None:
                pieces += (text[done:start], _replace(match))
                done = match.end()
                if len(pieces) >= 4096:
                    chunks.append("".join(pieces))
                    pieces.clear()
        # The next hit of this finder at or after both this one and the end
        # of what is replaced: hits inside a replacement are never looked at.
        hit = _COMPILED_FINDERS[index][0].search(sources[index], max(start + 1, done))
        if hit is None:
            heapq.heappop(heap)
        else:
            heapq.heapreplace(heap, (hit.start(), index))
    if done == 0:
        return text
    chunks += pieces
    chunks.append(text[done:])
    return "".join(chunks)


_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)
# Words that say secret only as a whole word of a name (``MYSQL_PWD``,
# ``REGISTRY_PASS``, ``SENTRY_DSN``, ``CI_JOB_JWT``, ``SLACK_WEBHOOK_URL``), not
# inside another (``OLDPWD``, ``COMPASS_HOME``); ``PWD`` alone is the working
# directory.
_SECRET_WORDS = frozenset({"PWD", "PASS", "PASSPHRASE", "DSN", "JWT", "COOKIE", "WEBHOOK"})
_NAME_WORDS = re.compile(r"[^A-Z0-9]+")


def is_secret_name(name: str) -> bool:
    """Environment variable names whose values we treat as secrets: any with
    ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``CREDENTIAL`` or
    ``AUTH`` in it, or a word (between ``_`` and the like) ``PWD``, ``PASS``,
    ``PASSPHRASE``, ``DSN``, ``JWT``, ``COOKIE`` or ``WEBHOOK``; not ``PWD``
    itself. Case is ignored."""
    if _SECRET_NAME.search(name):
        return True
    upper = name.upper()
    return upper != "PWD" and not _SECRET_WORDS.isdisjoint(_NAME_WORDS.split(upper))


# Query parameters that carry a credential: the secret-looking names, and the
# signatures of signed URLs (an Azure SAS's ``sig``, S3's ``X-Amz-Signature``).
_SECRET_PARAMETER = re.compile(r"^(?:sig|signature|code)$|signature", re.IGNORECASE)


def _secret_parameter(name: str) -> bool:
    return is_secret_name(name) or bool(_SECRET_PARAMETER.search(name))


def _query_fields(query: str) -> list[tuple[str, str, str]]:
    """A query string's fields as (field, name, value), as written."""
    fields = []
    for field in query.split("&") if query else []:
        name, _, value = field.partition("=")
        fields.append((field, name, value))
    return fields


def url_secrets(url: str | None) -> tuple[str, ...]:
    """The secret values a URL carries: its password (``user:password@``)
    and the values of its key-like query parameters (``key``, ``api_key``,
    ``token``, ``sig``...), each as written and percent-decoded. None for a
    URL without any, or text that is not a URL."""
    if not url or "://" not in url:
        return ()
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed IPv6 bracket
        return ()
    found: list[str] = []
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    for _, name, value in _query_fields(parts.query):
        if value and _secret_parameter(unquote_plus(name)):
            found += [value, unquote_plus(value)]
    return tuple(dict.fromkeys(value for value in found if value))


def redacted_url(url: str) -> str:
    """``url`` with its secrets (:func:`url_secrets`) replaced, the rest
    kept, so an error or a log line can name it."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return Redactor(url_secrets(url)).redact(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    netloc = parts.netloc
    if at and ":" in userinfo:
        netloc = userinfo.split(":", 1)[0] + ":" + REDACTED + "@" + host
    fields = [
        name + "=" + REDACTED if value and _secret_parameter(unquote_plus(name)) else field
        for field, name, value in _query_fields(parts.query)
    ]
    return urlunsplit((parts.scheme, netloc, parts.path, "&".join(fields), parts.fragment))


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


# Fields that carry a key or the TCP token (AgentConfig accepts both spellings).
_KEY_FIELDS = {"apiKey", "api_key", "authToken"}
# Fields that name the environment variable holding an agent's key.
_KEY_ENV_FIELDS = {"apiKeyEnv", "api_key_env"}
# Fields that hold a provider's base URL, whose password and key-like query
# parameters are secrets (:func:`url_secrets`).
_URL_FIELDS = {"baseURL", "base_url"}


# MCP servers' variables and headers, as ACP and AgentConfig write them.
_PAIR_LISTS = {"env", "headers"}


def _is_secret_pair(field: str, pair: Any) -> bool:
    """Whether an item of an ``env`` or ``headers`` list holds a secret value."""
    if not isinstance(pair, dict) or not isinstance(pair.get("value"), str):
        return False
    return field == "headers" or is_secret_name(str(pair.get("name", "")))


def scrub_credentials(value: Any) -> tuple[Any, set[str]]:
    """A copy of a JSON-RPC message with its credential fields replaced, and
    the secret values found there, for the paths that write whole messages
    (``--trace``, the DEBUG log) before any config in them is parsed: values
    of ``apiKey`` and ``authToken``, the variable an ``apiKeyEnv`` names, the
    secret-looking names of an ``env`` object and of ``env`` lists of
    ``{name, value}`` (MCP servers'), and every value of a ``headers`` list
    or object (a header carries a token whatever its name). Iterative: messages nest as
    deep as JSON parses."""
    found: set[str] = set()
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, dict):
            clean: dict[str, Any] = {}
            for key, child in item.items():
                if key in _KEY_FIELDS and isinstance(child, str):
                    found.add(child)
                    clean[key] = REDACTED
                elif key in _KEY_ENV_FIELDS and isinstance(child, str):
                    found.add(os.environ.get(child, ""))
                    clean[key] = child
                elif key in _URL_FIELDS and isinstance(child, str):
                    found.update(url_secrets(child))
                    clean[key] = redacted_url(child)
                elif key in _PAIR_LISTS and isinstance(child, list):
                    clean[key] = [None] * len(child)
                    for index, pair in enumerate(child):
                        if _is_secret_pair(key, pair):
                            found.add(pair["value"])
                            pair = {**pair, "value": REDACTED}
                        stack.append((pair, clean[key], index))
                elif key == "headers" and isinstance(child, dict):
                    # An object of headers (initializationOptions.telemetry's): every value.
                    clean[key] = {}
                    for name, val in child.items():
                        if isinstance(val, str):
                            found.add(val)
                        clean[key][name] = REDACTED
                elif key == "env" and isinstance(child, dict):
                    clean[key] = {}
                    for name, val in child.items():
                        if is_secret_name(str(name)):
                            if isinstance(val, str):
                                found.add(val)
                            clean[key][name] = REDACTED
                        else:
                            clean[key][name] = None  # a place, so the order is kept
                            stack.append((val, clean[key], name))
                else:
                    clean[key] = None
                    stack.append((child, clean, key))
            parent[slot] = clean
        elif isinstance(item, list):
            items: list[Any] = [None] * len(item)
            stack.extend((child, items, index) for index, child in enumerate(item))
            parent[slot] = items
        else:
            parent[slot] = item
    found.discard("")
    return root[0], found


# Every secret value this process has met in an agent's config (its key, MCP
# servers' secret variables and headers, credentials read from a file), for
# the output paths that serve no one agent: the log.
_known_secrets: set[str] = set()


def remember_secrets(values: Iterable[str]) -> None:
    """Keep ``values`` out of the log from now on (see :class:`RedactingFilter`)."""
    _known_secrets.update(value for value in values if len(value) >= 4)


class RedactingFilter(logging.Filter):
    """Applied to the stderr log handler: a log line (``--log-level DEBUG``
    logs whole message bodies) never carries a credential-shaped string, nor
    a secret value the process has been told of (:func:`remember_secrets`)."""

    def __init__(self) -> None:
        super().__init__()
        self._redactor = Redactor()
        self._known = 0  # how many remembered secrets the redactor holds

    def filter(self, record: logging.LogRecord) -> bool:
        if len(_known_secrets) != self._known:
            self._known = len(_known_secrets)
            self._redactor = Redactor(_known_secrets)
        message = record.getMessage()
        cleaned = self._redactor.redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
