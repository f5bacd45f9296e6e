"""The one shape guard, and the copying rules (docs/protocol.md, "The shape guard").

Every structured input (run input, prompt blocks, ``config.history``, a
beforeRun hook's messages) goes through :func:`guard_run_input`,
:func:`guard_prompt_input` or :func:`guard_messages`, which copy the caller's
data as plain JSON and check it against :mod:`.messages` in one pass. The copy
is private and never mutated; :func:`clone` hands a fresh one to anything user
code can touch (hooks, progress callbacks, ``get_history``, results), so no
caller can change what the library holds. Strings are immutable, so large ones
are shared, not duplicated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
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
    # The general copy (tool inputs, blocks off the guard's fast path, hook
    # answers): scalars are shared, not visited, and the failing key or index
    # is only looked at when something fails. Casts are strings so that no
    # generic alias is built per container at run time.
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        out: dict[str, object] = {}
        key: object = None
        try:
            for key, item in cast("dict[object, object]", value).items():
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
            for item in cast("Sequence[object]", value):
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
        return _copy_plain(dict(cast("dict[object, object]", value)))
    if isinstance(value, list | tuple):
        return _copy_plain(list(cast("Sequence[object]", value)))
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


def clone(value: Any) -> Any:
    """A fresh copy of data that is already plain (the library's own copies)."""
    if type(value) is dict:
        return {key: clone(item) for key, item in value.items()}
    if type(value) is list:
        return [clone(item) for item in value]
    return value


def clone_messages(messages: Sequence[LLMMessage]) -> list[LLMMessage]:
    """A fresh copy of a validated message list, for code outside the library."""
    return cast(list[LLMMessage], clone(list(messages)))


# --------------------------------------------------------------------------
# The shape guard (docs/protocol.md, "The shape guard")
#
# One pass over the message list copies and validates together. Plain data
# (exact dicts, lists and strings, as JSON parsing yields them) in the shapes
# that make up nearly every conversation (a message of role and content, a
# text block of type and text) takes a fast path that copies each container
# with ``dict.copy`` and checks it with exact type tests. Everything else
# (other block types, subclasses, tuples, values that are wrong) is copied by
# ``_copy_plain`` and the copy is checked by the table-driven checkers below,
# which never build a path on success: a failure carries its path segments
# and the path is written only when the error is raised.


class _ShapeFailure(_CopyFailure):
    """A value of the wrong shape. ``where`` are the path segments below the
    container being checked, outermost first (stored innermost first, like a
    copy failure's, so enclosing loops append their own index or key)."""

    def __init__(self, what: str, *where: str | int, input_hint: bool = False) -> None:
        super().__init__(what)
        self.segments = list(reversed(where))
        # Whether to add the string-input hint when the guarded value is a RunInput.
        self.input_hint = input_hint


_BASE64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_BASE64_CHUNK = 1 << 16


def _is_base64(data: str) -> bool:
    """Whether ``data`` is in the base64 alphabet with at most two ``=`` at
    its end. ``isascii`` is constant time; deleting the alphabet with
    ``bytes.translate`` is a table loop in C, the fastest check the standard
    library has (a regex fullmatch or ``b64decode(validate=True)`` take
    several times as long). It runs on 64 KiB slices, so a 20 MB image costs no
    20 MB temporary buffers (and their page faults), only cache-sized ones."""
    if not data.isascii():
        return False
    end = len(data)
    if data.endswith("="):
        end -= 2 if data.endswith("==") else 1
    for start in range(0, end, _BASE64_CHUNK):
        chunk = data[start : min(start + _BASE64_CHUNK, end)]
        if chunk.encode("ascii").translate(None, _BASE64_ALPHABET):
            return False
    return True


def _check_str(obj: dict[str, Any], key: str, *where: str | int) -> None:
    if not isinstance(obj.get(key), str):
        raise _ShapeFailure("must be a string", *where, key)


def _check_media_source(source: object, where: tuple[str | int, ...], *, url_allowed: bool) -> None:
    if not isinstance(source, dict):
        raise _ShapeFailure("must be an object", *where)
    kind = source.get("type")
    if kind == "base64":
        _check_str(source, "media_type", *where)
        _check_str(source, "data", *where)
        if not source["data"]:
            raise _ShapeFailure("must not be empty (base64 of the file's bytes)", *where, "data")
        if not _is_base64(source["data"]):
            raise _ShapeFailure(
                "must be base64 (A-Z a-z 0-9 + /, = padding, no line breaks)", *where, "data"
            )
    elif kind == "url" and url_allowed:
        _check_str(source, "media_type", *where)
        _check_str(source, "url", *where)
    else:
        allowed = '"base64" or "url"' if url_allowed else '"base64"'
        raise _ShapeFailure(f"must be {allowed}", *where, "type")


def _check_tool_result_parts(parts: list[Any]) -> None:
    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            raise _ShapeFailure("must be an object", "content", index)
        kind = part.get("type")
        if kind == "text":
            _check_str(part, "text", "content", index)
        elif kind == "image":
            _check_media_source(part.get("source"), ("content", index, "source"), url_allowed=True)
        elif kind == "file":
            _check_str(part, "filename", "content", index)
            _check_media_source(part.get("source"), ("content", index, "source"), url_allowed=True)
        else:
            raise _ShapeFailure('must be "text", "image" or "file"', "content", index, "type")


def _check_text(block: dict[str, Any]) -> None:
    _check_str(block, "text")


def _check_image(block: dict[str, Any]) -> None:
    _check_media_source(block.get("source"), ("source",), url_allowed=False)


def _check_tool_use(block: dict[str, Any]) -> None:
    _check_str(block, "id")
    _check_str(block, "name")
    if not isinstance(block.get("input"), dict):
        raise _ShapeFailure("must be an object", "input")


def _check_tool_result(block: dict[str, Any]) -> None:
    _check_str(block, "tool_use_id")
    is_error = block.get("is_error")
    if "is_error" in block and not isinstance(is_error, bool):
        raise _ShapeFailure("must be a boolean", "is_error")
    content = block.get("content")
    if is_error is True and not isinstance(content, str):
        raise _ShapeFailure("must be a string when is_error is true", "content")
    if isinstance(content, list):
        _check_tool_result_parts(content)
    elif not isinstance(content, str):
        raise _ShapeFailure("must be a string or an array of parts", "content")


def _check_reasoning(block: dict[str, Any]) -> None:
    _check_str(block, "text")
    for optional in ("signature", "redactedData"):
        if optional in block and not isinstance(block[optional], str):
            raise _ShapeFailure("must be a string", optional)


# The checker of each known block type; any other type passes (the provider
# adapter maps it or fails the run).
_BLOCK_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "text": _check_text,
    "image": _check_image,
    "tool_use": _check_tool_use,
    "tool_result": _check_tool_result,
    "reasoning": _check_reasoning,
}


def _check_block(block: object) -> None:
    if not isinstance(block, dict):
        raise _ShapeFailure("must be an object")
    kind = block.get("type")
    if not isinstance(kind, str):
        raise _ShapeFailure("must be a string", "type")
    check = _BLOCK_CHECKS.get(kind)
    if check is not None:
        check(block)


def _check_blocks(blocks: list[Any]) -> None:
    index = 0
    try:
        for index, block in enumerate(blocks):  # noqa: B007 (read by the handler)
            # Fast path: a text block whose type and text are plain strings.
            if type(block) is dict:
                kind = block.get("type")
                if type(kind) is str and kind == "text" and type(block.get("text")) is str:
                    continue
            _check_block(block)
    except _ShapeFailure as failure:
        failure.segments.append(index)
        raise


_CONTENT_IS_STRING = 'must be an array of blocks; for text use [{"type": "text", "text": ...}]'


def _check_message(message: object) -> None:
    if not isinstance(message, dict):
        raise _ShapeFailure("must be an object")
    if message.get("role") not in ("user", "assistant"):
        raise _ShapeFailure('must be "user" or "assistant"', "role")
    content = message.get("content")
    if isinstance(content, str):  # the shape of other chat APIs' messages
        raise _ShapeFailure(_CONTENT_IS_STRING, "content", input_hint=True)
    if not isinstance(content, list):
        raise _ShapeFailure("must be an array", "content")
    try:
        _check_blocks(content)
    except _ShapeFailure as failure:
        failure.segments.append("content")
        raise


def _check_messages(messages: list[Any]) -> None:
    index = 0
    try:
        for index, message in enumerate(messages):  # noqa: B007 (read by the handler)
            # Fast path: a plain role string and a plain list of blocks.
            if type(message) is dict:
                role = message.get("role")
                content = message.get("content")
                if (
                    type(content) is list
                    and type(role) is str
                    and (role == "user" or role == "assistant")
                ):
                    try:
                        _check_blocks(content)
                    except _ShapeFailure as failure:
                        failure.segments.append("content")
                        raise
                    continue
            _check_message(message)
    except _ShapeFailure as failure:
        failure.segments.append(index)
        raise


def _copy_checked(value: object, check: Callable[[object], None]) -> Any:
    """The general path: copy as plain data, then check the private copy."""
    copied = _copy_plain(value)
    check(copied)
    return copied


def _copy_blocks(blocks: Sequence[object]) -> list[Any]:
    out: list[Any] = []
    append = out.append
    try:
        for block in blocks:
            # Fast path: a text block of exactly type and text, all plain strings.
            if type(block) is dict and len(block) == 2:
                text = block.get("text")
                kind = block.get("type")
                if type(text) is str and type(kind) is str and kind == "text":
                    first, second = block
                    if type(first) is str and type(second) is str:
                        append(block.copy())
                        continue
            append(_copy_checked(block, _check_block))
    except _CopyFailure as failure:
        failure.segments.append(len(out))
        raise
    return out


def _copy_messages(messages: Sequence[object]) -> list[Any]:
    out: list[Any] = []
    append = out.append
    try:
        for message in messages:
            # Fast path: exactly role and content, a plain role string and a plain list.
            if type(message) is dict and len(message) == 2:
                role = message.get("role")
                content = message.get("content")
                if (
                    type(content) is list
                    and type(role) is str
                    and (role == "user" or role == "assistant")
                ):
                    first, second = message
                    if type(first) is str and type(second) is str:
                        copied = message.copy()
                        try:
                            copied["content"] = _copy_blocks(content)
                        except _CopyFailure as failure:
                            failure.segments.append("content")
                            raise
                        append(copied)
                        continue
            append(_copy_checked(message, _check_message))
    except _CopyFailure as failure:
        failure.segments.append(len(out))
        raise
    return out


def _require_nonempty_array(
    value: object, path: str, what: str, *, string_allowed: bool = True
) -> None:
    if not isinstance(value, list | tuple):
        expected = f"a string or an array of {what}" if string_allowed else f"an array of {what}"
        raise InvalidMessageError(f"{path} must be {expected}", path)
    if not value:
        problem = f"must not be an empty array (give at least one {what[:-1]})"
        raise InvalidMessageError(f"{path} {problem}", path)


def _guarded(
    value: Any,
    path: str,
    owned: bool,
    copy: Callable[[Sequence[object]], list[Any]],
    check: Callable[[list[Any]], None],
) -> list[Any]:
    """Run the one pass (or, for owned plain data, the checks alone) and turn
    an internal failure into the InvalidMessageError the caller sees."""
    if owned and type(value) is list:
        try:
            check(value)
        except _ShapeFailure as failure:
            raise _invalid(failure, path) from None
        return value
    try:
        return copy(value)
    except _CopyFailure as failure:
        # Copy errors come first wherever they are (the guard's contract since
        # it copied before it checked): look for one before reporting a shape.
        if isinstance(failure, _ShapeFailure):
            copy_plain(value, path)
        raise _invalid(failure, path) from None
    except RecursionError:
        raise InvalidMessageError(f"{path} is nested too deeply to copy", path) from None


def _invalid(failure: _CopyFailure, path: str) -> InvalidMessageError:
    where = join_path(path, list(reversed(failure.segments)))
    what = failure.what
    if isinstance(failure, _ShapeFailure) and failure.input_hint and where.startswith("input"):
        what += " or pass a string as input"
    return InvalidMessageError(f"{where} {what}", where)


def guard_messages(
    value: object, path: str = "messages", *, owned: bool = False
) -> list[LLMMessage]:
    """Validate and copy a complete message list (``config.history``, a hook's
    ``messages``). An empty list is rejected like any empty RunInput.

    ``owned=True`` skips the copy for data nobody else holds a reference to
    and that is plain by construction (JSON just parsed off the wire)."""
    _require_nonempty_array(value, path, "messages", string_allowed=False)
    return _guarded(value, path, owned, _copy_messages, _check_messages)


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
    return {"role": "user", "content": _guarded(value, path, owned, _copy_blocks, _check_blocks)}
