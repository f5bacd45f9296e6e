"""The shape guard as it was before the one-pass rewrite (issue 13), kept
verbatim as the oracle that tests/core/test_guard_equivalence.py compares
``oma_host.core.messages`` with: copy the whole input as plain data first, then
check the copy, building every path as it goes. Slow and obviously faithful to
the rules; not imported by the package."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from oma_host.core.errors import InvalidMessageError
from oma_host.core.messages import LLMMessage, text_message


class _CopyFailure(Exception):
    """Raised inside the copier; carries the path segments, innermost first,
    so paths are only formatted when something is actually wrong."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
        self.segments: list[str | int] = []


def _describe(value: object) -> str:
    if callable(value):
        return f"a function ({type(value).__name__})"
    return f"a {type(value).__module__}.{type(value).__qualname__} object"


_SCALARS = frozenset({str, int, float, bool, type(None)})
# Worded as the TypeScript system words it, so code matching its message still matches.
_CLONEABLE = (
    "messages must contain cloneable structured data "
    "(strings, numbers, booleans, null, arrays and objects with string keys)"
)


def _copy_plain(value: object) -> object:
    # The hot path of every structured call: scalars are shared, not visited,
    # and the failing key or index is only looked at when something fails.
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        out: dict[str, object] = {}
        key: object = None
        try:
            for key, item in cast(dict[object, object], value).items():
                if type(key) is not str:
                    break
                out[key] = item if type(item) in _SCALARS else _copy_plain(item)
            else:
                return out
        except _CopyFailure as failure:
            failure.segments.append(cast(str, key))
            raise
        raise _CopyFailure(f"has the non-string key {key!r}; {_CLONEABLE}")
    if kind is list or kind is tuple:
        items: list[object] = []
        append = items.append
        try:
            for item in cast(Sequence[object], value):
                append(item if type(item) in _SCALARS else _copy_plain(item))
        except _CopyFailure as failure:
            failure.segments.append(len(items))
            raise
        return items
    # Subclasses of the plain types (str enums, dict subclasses) become plain.
    # str.__str__ gives the characters even where a subclass (an Enum) overrides __str__.
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        return _copy_plain(dict(cast(dict[object, object], value)))
    if isinstance(value, list | tuple):
        return _copy_plain(list(cast(Sequence[object], value)))
    raise _CopyFailure(f"is {_describe(value)}; {_CLONEABLE}")


def join_path(base: str, segments: Sequence[str | int]) -> str:
    """``join_path("input", [0, "content", 1])`` → ``input[0].content[1]``."""
    parts = [base]
    for segment in segments:
        if isinstance(segment, int):
            parts.append(f"[{segment}]")
        elif segment.isidentifier():
            parts.append(f".{segment}")
        else:
            parts.append(f"[{segment!r}]")
    return "".join(parts)


def copy_plain(value: object, path: str = "input") -> Any:
    """Copy caller data as plain JSON data, or raise InvalidMessageError naming
    the first value that cannot be copied (a function, a socket, a set...)."""
    try:
        return _copy_plain(value)
    except _CopyFailure as failure:
        where = join_path(path, list(reversed(failure.segments)))
        raise InvalidMessageError(f"{where} {failure.what}", where) from None
    except RecursionError:
        raise InvalidMessageError(f"{path} is nested too deeply to copy", path) from None


# --------------------------------------------------------------------------
# The shape guard (docs/protocol.md, "The shape guard")


def _fail(path: str, problem: str) -> InvalidMessageError:
    return InvalidMessageError(f"{path} {problem}", path)


def _require_str(obj: dict[str, Any], key: str, path: str) -> None:
    if not isinstance(obj.get(key), str):
        raise _fail(f"{path}.{key}", "must be a string")


_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _is_base64(data: str) -> bool:
    """Whether ``data`` is in the base64 alphabet with at most two ``=`` at
    its end. ``isascii`` is constant time; deleting the alphabet with
    ``bytes.translate`` is a table loop in C (about 20 ms for a 20 MB image,
    where a regex fullmatch or ``b64decode(validate=True)`` take 65-90 ms)."""
    if not data.isascii():
        return False
    rest = data.encode("ascii").translate(None, _BASE64_ALPHABET)
    return rest in (b"", b"=", b"==") and data.endswith(rest.decode("ascii"))


def _check_media_source(source: object, path: str, *, url_allowed: bool) -> None:
    if not isinstance(source, dict):
        raise _fail(path, "must be an object")
    kind = source.get("type")
    if kind == "base64":
        _require_str(source, "media_type", path)
        _require_str(source, "data", path)
        if not source["data"]:
            raise _fail(f"{path}.data", "must not be empty (base64 of the file's bytes)")
        if not _is_base64(source["data"]):
            raise _fail(
                f"{path}.data", "must be base64 (A-Z a-z 0-9 + /, = padding, no line breaks)"
            )
    elif kind == "url" and url_allowed:
        _require_str(source, "media_type", path)
        _require_str(source, "url", path)
    else:
        allowed = '"base64" or "url"' if url_allowed else '"base64"'
        raise _fail(f"{path}.type", f"must be {allowed}")


def _check_tool_result_parts(parts: list[Any], path: str) -> None:
    for index, part in enumerate(parts):
        where = f"{path}[{index}]"
        if not isinstance(part, dict):
            raise _fail(where, "must be an object")
        kind = part.get("type")
        if kind == "text":
            _require_str(part, "text", where)
        elif kind == "image":
            _check_media_source(part.get("source"), f"{where}.source", url_allowed=True)
        elif kind == "file":
            _require_str(part, "filename", where)
            _check_media_source(part.get("source"), f"{where}.source", url_allowed=True)
        else:
            raise _fail(f"{where}.type", 'must be "text", "image" or "file"')


def _check_block(block: object, path: str) -> None:
    if not isinstance(block, dict):
        raise _fail(path, "must be an object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _fail(f"{path}.type", "must be a string")
    if kind == "text":
        _require_str(block, "text", path)
    elif kind == "image":
        _check_media_source(block.get("source"), f"{path}.source", url_allowed=False)
    elif kind == "tool_use":
        _require_str(block, "id", path)
        _require_str(block, "name", path)
        if not isinstance(block.get("input"), dict):
            raise _fail(f"{path}.input", "must be an object")
    elif kind == "tool_result":
        _require_str(block, "tool_use_id", path)
        is_error = block.get("is_error")
        if "is_error" in block and not isinstance(is_error, bool):
            raise _fail(f"{path}.is_error", "must be a boolean")
        content = block.get("content")
        if is_error is True and not isinstance(content, str):
            raise _fail(f"{path}.content", "must be a string when is_error is true")
        if isinstance(content, list):
            _check_tool_result_parts(content, f"{path}.content")
        elif not isinstance(content, str):
            raise _fail(f"{path}.content", "must be a string or an array of parts")
    elif kind == "reasoning":
        _require_str(block, "text", path)
        for optional in ("signature", "redactedData"):
            if optional in block and not isinstance(block[optional], str):
                raise _fail(f"{path}.{optional}", "must be a string")
    # Any other block type passes: the provider adapter maps it or fails the run.


def _check_message(message: object, path: str) -> None:
    if not isinstance(message, dict):
        raise _fail(path, "must be an object")
    if message.get("role") not in ("user", "assistant"):
        raise _fail(f"{path}.role", 'must be "user" or "assistant"')
    content = message.get("content")
    if isinstance(content, str):  # the shape of other chat APIs' messages
        shorthand = " or pass a string as input" if path.startswith("input") else ""
        raise _fail(
            f"{path}.content",
            'must be an array of blocks; for text use [{"type": "text", "text": ...}]' + shorthand,
        )
    if not isinstance(content, list):
        raise _fail(f"{path}.content", "must be an array")
    for index, block in enumerate(content):
        _check_block(block, f"{path}.content[{index}]")


def _require_nonempty_array(
    value: object, path: str, what: str, *, string_allowed: bool = True
) -> None:
    if not isinstance(value, list | tuple):
        expected = f"a string or an array of {what}" if string_allowed else f"an array of {what}"
        raise _fail(path, f"must be {expected}")
    if not value:
        raise _fail(path, f"must not be an empty array (give at least one {what[:-1]})")


def guard_messages(
    value: object, path: str = "messages", *, owned: bool = False
) -> list[LLMMessage]:
    """Validate and copy a complete message list (``config.history``, a hook's
    ``messages``). An empty list is rejected like any empty RunInput.

    ``owned=True`` skips the copy for data nobody else holds a reference to
    and that is plain by construction (JSON just parsed off the wire)."""
    _require_nonempty_array(value, path, "messages", string_allowed=False)
    copied = value if owned and type(value) is list else copy_plain(value, path)
    for index, message in enumerate(copied):
        _check_message(message, f"{path}[{index}]")
    return cast(list[LLMMessage], copied)


def guard_run_input(value: object, path: str = "input", *, owned: bool = False) -> list[LLMMessage]:
    """RunInput → a private, validated message list (a string becomes one user
    text message). ``owned`` as for :func:`guard_messages`."""
    if isinstance(value, str):
        return [text_message(str.__str__(value))]
    _require_nonempty_array(value, path, "messages")
    return guard_messages(value, path, owned=owned)


def guard_prompt_input(value: object, path: str = "input", *, owned: bool = False) -> LLMMessage:
    """PromptInput → exactly one private, validated user message. ``owned`` as
    for :func:`guard_messages`."""
    if isinstance(value, str):
        return text_message(str.__str__(value))
    _require_nonempty_array(value, path, "blocks")
    blocks = value if owned and type(value) is list else copy_plain(value, path)
    for index, block in enumerate(blocks):
        _check_block(block, f"{path}[{index}]")
    return {"role": "user", "content": cast(list[Any], blocks)}
