"""The one formatter for pydantic validation errors: every params model, the
AgentConfig and the evaluation config report problems the same way, as a JSON
path (``config.backend.args[1]``) followed by what is wrong."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

# Discriminated unions put the chosen tag into the location (``backend.process.args``);
# it is not part of the path the client wrote.
_UNION_TAGS: frozenset[str] = frozenset({"process", "acp"})


def json_path(where: str, location: Iterable[int | str]) -> str:
    """``where`` followed by ``location`` written as a JSON path."""
    path = where
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in _UNION_TAGS:
            continue
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def describe_validation_error(error: ValidationError, where: str) -> str:
    """Every problem of ``error`` as ``path: message``, joined by ``; ``."""
    problems = []
    for item in error.errors():
        message = "is not a known field" if item["type"] == "extra_forbidden" else item["msg"]
        problems.append(f"{json_path(where, item['loc'])}: {message}")
    return "; ".join(problems)
