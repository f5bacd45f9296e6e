"""The VS Code client's wire types, written as TypeScript from
``docs/protocol.schema.json`` so the client cannot drift from the host.

Every ``$defs`` entry becomes a type of the same name, each method's,
server-to-client request's and notification's params and result a type named
by its schema ``title``, and ``Methods``, ``ServerRequests`` and
``Notifications`` map each wire name to them; ``ErrorCode`` comes from
``oma_host/core/errors.py``. A schema keyword with no TypeScript meaning here
is an error naming where it is, not a silent ``unknown``. ``python3 -m
oma_host.cli.ts_types`` rewrites ``editors/vscode/src/core/protocol.ts``, and
a test fails when the checked-in file differs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oma_host.cli.schema import ROOT, SCHEMA_PATH
from oma_host.core.errors import ErrorCode

TS_PATH = ROOT / "editors" / "vscode" / "src" / "core" / "protocol.ts"
MODULE = "oma_host.cli.ts_types"
WIDTH = 110  # the extension's line length

# Validation keywords: they narrow values, not types.
_NO_TYPE = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "format",
        "discriminator",
    }
)
_TYPED = frozenset(
    {
        "$ref",
        "const",
        "enum",
        "anyOf",
        "oneOf",
        "type",
        "items",
        "properties",
        "required",
        "additionalProperties",
        "propertyNames",
    }
)
_PRIMITIVES = {
    "string": "string",
    "integer": "number",
    "number": "number",
    "boolean": "boolean",
    "null": "null",
}
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SIMPLE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(\[\])*")
_DEFS = "#/$defs/"

HEADER = f"""\
/**
 * The oma-host wire types (docs/protocol.md), GENERATED from
 * docs/protocol.schema.json by `python3 -m {MODULE}`: do not edit
 * this file; change the host's models, regenerate the schema, then this file (a
 * test fails while it differs).
 *
 * Field names follow the wire exactly: camelCase protocol params, and the seed
 * data types' own names (`media_type`, `input_tokens`, `is_error`).
 */
"""


class SchemaError(ValueError):
    """A schema construct this generator cannot write as TypeScript."""


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json.dumps(value)


def _key(name: str) -> str:
    return name if _IDENTIFIER.fullmatch(name) else _literal(name)


def _doc(description: str | None, indent: str) -> list[str]:
    """A JSDoc comment; the schema's reST ``code`` becomes `code`."""
    if not description:
        return []
    text = description.replace("``", "`").replace("*/", "*\\/").strip()
    room = WIDTH - len(indent) - 3
    lines = [part for line in text.splitlines() for part in textwrap.wrap(line, room) or [""]]
    if len(lines) == 1 and len(indent) + len(lines[0]) + 7 <= WIDTH:
        return [f"{indent}/** {lines[0]} */"]
    body = [f"{indent} *{' ' + line if line else ''}" for line in lines]
    return [f"{indent}/**", *body, f"{indent} */"]


def _union(members: list[str], indent: str) -> str:
    """``a | b`` on one line when it fits, else one ``| member`` a line (the
    text then starts with a newline, to follow ``name:`` or ``type X =``)."""
    unique = list(dict.fromkeys(members))
    if not unique:
        return "never"
    line = " | ".join(unique)
    if len(unique) == 1 or ("\n" not in line and len(indent) + len(line) <= WIDTH - 30):
        return line
    return "".join(f"\n{indent}  | {member}" for member in unique)


def _after(head: str, kind: str) -> str:
    """``head`` and a type after it: ``name: T`` or ``name:`` then a union's lines."""
    return f"{head}{kind}" if kind.startswith("\n") else f"{head} {kind}"


class _Writer:
    """Writes schemas as TypeScript types, checking each keyword it meets."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs

    def type(self, schema: Any, where: str, indent: str = "") -> str:
        if schema is True or schema == {}:
            return "unknown"
        if not isinstance(schema, dict):
            raise SchemaError(f"{where}: a schema must be an object, not {schema!r}")
        unknown = sorted(set(schema) - _NO_TYPE - _TYPED)
        if unknown:
            raise SchemaError(f"{where}: no TypeScript for the keyword {unknown[0]!r}")
        if "$ref" in schema:
            return self._ref(schema["$ref"], where)
        if "const" in schema:
            return _literal(schema["const"])
        if "enum" in schema:
            return _union([_literal(value) for value in schema["enum"]], indent)
        for union in ("anyOf", "oneOf"):
            if union in schema:
                options = schema[union]
                members = [
                    self.type(option, f"{where}/{union}/{index}", indent + "    ")
                    for index, option in enumerate(options)
                ]
                return _union(members, indent)
        kind = schema.get("type")
        if isinstance(kind, list):
            members = [self.type({**schema, "type": one}, where, indent + "    ") for one in kind]
            return _union(members, indent)
        if kind == "array":
            item = self.type(schema.get("items", True), f"{where}/items", indent)
            return f"{item}[]" if _SIMPLE.fullmatch(item) else f"Array<{item}>"
        if kind == "object" or "properties" in schema:
            return self._object(schema, where, indent)
        if kind is None:
            return "unknown"
        if kind not in _PRIMITIVES:
            raise SchemaError(f"{where}: no TypeScript for the type {kind!r}")
        return _PRIMITIVES[kind]

    def _ref(self, ref: str, where: str) -> str:
        name = ref.removeprefix(_DEFS)
        if not ref.startswith(_DEFS) or name not in self.defs:
            raise SchemaError(f"{where}: $ref {ref!r} names no entry of $defs")
        return name

    def _values(self, schema: dict[str, Any], where: str, indent: str) -> str | None:
        """The type of the properties ``additionalProperties`` allows, if any."""
        extra = schema.get("additionalProperties")
        if extra is None or extra is False:
            return None
        return self.type(extra, f"{where}/additionalProperties", indent)

    def _object(self, schema: dict[str, Any], where: str, indent: str) -> str:
        properties: dict[str, Any] = schema.get("properties", {})
        values = self._values(schema, where, indent)
        names = schema.get("propertyNames", {})
        if "const" in names or "enum" in names:
            if properties or values is None:
                raise SchemaError(f"{where}: propertyNames needs additionalProperties alone")
            keys = self.type(names, f"{where}/propertyNames", indent)
            return f"{{ [key in {keys}]?: {values} }}"
        if not properties:
            if values is None:
                closed = schema.get("additionalProperties") is False
                return "Record<string, never>" if closed else "Record<string, unknown>"
            return f"Record<string, {values}>"
        if values not in (None, "unknown"):
            raise SchemaError(f"{where}: typed additionalProperties beside properties")
        lines = ["{", *self.fields(schema, where, indent + "  ")]
        if values is not None:
            lines.append(f"{indent}  [field: string]: unknown;")
        lines.append(f"{indent}}}")
        return "\n".join(lines)

    def fields(self, schema: dict[str, Any], where: str, indent: str) -> list[str]:
        """One line (with its doc comment) per property of an object schema."""
        required = set(schema.get("required", []))
        lines: list[str] = []
        for name, field in schema.get("properties", {}).items():
            lines.extend(_doc(field.get("description"), indent))
            mark = "" if name in required else "?"
            kind = self.type(field, f"{where}/properties/{name}", indent)
            lines.append(_after(f"{indent}{_key(name)}{mark}:", kind) + ";")
        return lines

    def declaration(self, name: str, schema: dict[str, Any], where: str) -> list[str]:
        """``export interface`` for an object with fields, else ``export type``."""
        lines = _doc(schema.get("description"), "")
        plain = schema.get("additionalProperties") in (None, False, True)
        if schema.get("properties") and plain and "propertyNames" not in schema:
            lines.append(f"export interface {name} {{")
            lines.extend(self.fields(schema, where, "  "))
            if schema.get("additionalProperties") is True:
                lines.append("  [field: string]: unknown;")
            lines.append("}")
            return lines
        lines.append(_after(f"export type {name} =", self.type(schema, where)) + ";")
        return lines


def _named(schema: Any) -> str | None:
    """The name a top-level params or result schema is declared under: its
    title, when it is an object written in place (not a ``$ref``)."""
    if isinstance(schema, dict) and schema.get("type") == "object" and "title" in schema:
        return str(schema["title"])
    return None


def generate(schema: Mapping[str, Any]) -> str:
    """The TypeScript file for ``schema`` (the document ``oma-host schema`` prints)."""
    defs: dict[str, Any] = schema["$defs"]
    writer = _Writer(defs)
    version = _literal(schema["protocolVersion"])
    blocks = [
        [
            "/** The protocol version this file was generated for. */",
            f"export const PROTOCOL_VERSION = {version};",
        ]
    ]
    for name, definition in defs.items():
        blocks.append(writer.declaration(name, definition, f"$defs/{name}"))

    declared: dict[str, Any] = {}

    def reference(part: Any, where: str) -> str:
        """A top-level schema by name, declared on first use."""
        name = _named(part)
        if name is None:
            return writer.type(part, where, "  ")
        if name in defs or (name in declared and declared[name] != part):
            raise SchemaError(f"{where}: the title {name!r} names two different types")
        if name not in declared:
            declared[name] = part
            blocks.append(writer.declaration(name, part, where))
        return name

    maps: list[list[str]] = []
    for section, heading in (
        ("methods", 'Each method\'s params and result (docs/protocol.md, "Methods").'),
        ("serverRequests", "Each request the host sends the client, and the client's answer."),
    ):
        lines = [*_doc(heading, ""), f"export interface {section[0].upper()}{section[1:]} {{"]
        for method, pair in schema[section].items():
            where = f"{section}/{method}"
            params = reference(pair["params"], f"{where}/params")
            result = reference(pair["result"], f"{where}/result")
            lines.append(f"  {_key(method)}: {{ params: {params}; result: {result} }};")
        maps.append([*lines, "}"])
    lines = [
        *_doc("Each notification the host sends, and its params.", ""),
        "export interface Notifications {",
    ]
    for method, params in schema["notifications"].items():
        lines.append(f"  {_key(method)}: {reference(params, f'notifications/{method}')};")
    maps.append([*lines, "}"])

    codes = [f"  {code.type_name}: {code.value}," for code in ErrorCode]
    maps.append(
        [
            *_doc(
                'The JSON-RPC error codes the host answers with (docs/protocol.md, "Errors").', ""
            ),
            "export const ErrorCode = {",
            *codes,
            "} as const;",
        ]
    )
    return HEADER + "\n" + "\n\n".join("\n".join(block) for block in [*blocks, *maps]) + "\n"


def render() -> str:
    """The file as the committed schema generates it."""
    return generate(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python3 -m {MODULE}",
        description="Write the VS Code client's wire types from docs/protocol.schema.json.",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=TS_PATH,
        help=f"where to write them (default: {TS_PATH.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    args.out.write_text(render(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
