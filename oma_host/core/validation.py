"""The one formatter of pydantic validation errors: a JSON path, then what is wrong.

Every params model, the AgentConfig and the evaluation config report problems
alike; an unknown field or method name is answered with the nearest known one.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticCustomError

from oma_host.core.suggest import did_you_mean

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


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold (``X | None``, ``list[X]``, a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) is None and not isinstance(annotation, types.UnionType):
        return []
    return [model for arg in typing.get_args(annotation) for model in _models_in(arg)]


def _field_names(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _known_fields(model: type[BaseModel], location: Sequence[int | str]) -> list[str]:
    """The field names of the object an unknown field at ``location`` was
    found in. A location part that is no field is a discriminated union's tag:
    it keeps the union's members that have a field of that literal value."""
    models = [model]
    for part in location[:-1]:
        if isinstance(part, int):
            continue
        fields = [m.model_fields.get(part) or _by_alias(m, part) for m in models]
        inner = [found for field in fields if field for found in _models_in(field.annotation)]
        models = inner or [m for m in models if _has_literal(m, part)] or models
    return [name for m in models for name in _field_names(m)]


def _by_alias(model: type[BaseModel], alias: str) -> Any:
    return next((f for f in model.model_fields.values() if f.alias == alias), None)


def _has_literal(model: type[BaseModel], value: str) -> bool:
    return any(
        typing.get_origin(field.annotation) is typing.Literal
        and value in typing.get_args(field.annotation)
        for field in model.model_fields.values()
    )


def describe_validation_error(
    error: ValidationError,
    where: str,
    tags: Collection[str] = (),
    model: type[BaseModel] | None = None,
) -> str:
    """Every problem of ``error`` as ``path: message`` (``path message`` for a
    predicate_error), joined by ``; `` (``tags``: the discriminated unions'
    tags the model has; see json_path). With the ``model`` that was
    validated, an unknown field is answered with the nearest known one."""
    problems = []
    for item in error.errors():
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "is not a known field"
            if model is not None and item["loc"] and isinstance(item["loc"][-1], str):
                message += did_you_mean(item["loc"][-1], _known_fields(model, item["loc"]))
        separator = " " if item["type"] == _PREDICATE else ": "
        problems.append(f"{json_path(where, item['loc'], tags)}{separator}{message}")
    return "; ".join(problems)
