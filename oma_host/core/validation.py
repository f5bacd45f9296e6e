"""The one formatter for pydantic validation errors: every params model, the
AgentConfig and the evaluation config report problems the same way, as a JSON
path (``config.backend.args[1]``) followed by what is wrong."""

from __future__ import annotations

from collections.abc import Collection, Iterable

from pydantic import ValidationError
from pydantic_core import PydanticCustomError

# The error type of predicate_error: its message reads straight after the path.
_PREDICATE = "predicate"


def predicate_error(message: str) -> PydanticCustomError:
    """The error a validator raises with a message worded, like the shape
    guard's, as a predicate of the field (``must be a string: ...``): it is
    written ``path message``, where pydantic's own sentences ("Input should
    be ...") follow ``path: ``."""
    return PydanticCustomError(_PREDICATE, message)


def json_path(where: str, location: Iterable[int | str], tags: Collection[str] = ()) -> str:
    """``where`` followed by ``location`` written as a JSON path. A
    discriminated union puts the chosen tag into the location
    (``backend.process.args``); ``tags`` are left out, since they are not
    part of the path the client wrote."""
    path = where
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in tags:
            continue
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def describe_validation_error(
    error: ValidationError, where: str, tags: Collection[str] = ()
) -> str:
    """Every problem of ``error`` as ``path: message`` (``path message`` for a
    predicate_error), joined by ``; `` (``tags``: the discriminated unions'
    tags the model has; see json_path)."""
    problems = []
    for item in error.errors():
        message = "is not a known field" if item["type"] == "extra_forbidden" else item["msg"]
        separator = " " if item["type"] == _PREDICATE else ": "
        problems.append(f"{json_path(where, item['loc'], tags)}{separator}{message}")
    return "; ".join(problems)
