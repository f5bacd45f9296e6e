"""JSON through CPython's C codec (``_json``), without importing :mod:`json`.

``json`` imports ``re``, which costs as much as the interpreter's start; the
ACP door reads its agents file and answers ``initialize`` before that."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def _c_codec() -> Any:
    """CPython's ``_json`` (typed loosely: its stubs do not describe the
    context object it reads), or None elsewhere."""
    try:
        import _json
    except ImportError:  # not CPython: the json package does the same
        return None
    return _json


_json = _c_codec()


class _ScanContext:
    """The attributes ``_json.make_scanner`` reads: ``json.loads``' settings,
    but NaN and Infinity refused (the wire is JSON)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    def __init__(self) -> None:
        self.memo: dict[str, str] = {}  # the object keys seen, shared as json shares them

    @staticmethod
    def parse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")


_WHITESPACE = " \t\n\r"


def loads(text: str) -> Any:
    """The JSON value ``text`` holds; ValueError, saying what is wrong, when
    it holds anything else."""
    if _json is not None:
        start = len(text) - len(text.lstrip(_WHITESPACE))
        try:
            value, end = _json.make_scanner(_ScanContext())(text, start)
        except Exception:  # json says what is wrong, below
            # StopIteration for no value; a malformed one is an error the
            # codec can raise only once json.decoder is imported.
            pass
        else:
            if not text[end:].strip(_WHITESPACE):
                return value
    import json  # a text the codec refused, or no codec

    return json.loads(text, parse_constant=_ScanContext.parse_constant)


def dumps(value: Any) -> str:
    """``value`` as compact JSON with ASCII escapes (``json.dumps(value,
    separators=(",", ":"))``); ValueError for what JSON cannot hold."""
    if _json is None:
        import json

        return json.dumps(value, separators=(",", ":"))
    encode = _json.make_encoder(
        {}, _unencodable, _json.encode_basestring_ascii, None, ":", ",", False, False, False
    )
    return "".join(encode(value, 0))


def _unencodable(value: Any) -> Any:
    raise ValueError(f"{type(value).__name__} is not JSON")
