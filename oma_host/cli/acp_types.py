"""The ACP door's generated wire types: TypedDicts, written from the stable v1
schema of ``@agentclientprotocol/sdk``, for the forms the door builds or reads
as plain dicts: what the ``agent-client-protocol`` Python package (0.12.1,
ACP schema 1.19) does not model, and what it does but the door keeps plain.

Typed with these (docs/acp.md, "Against the stable schema"), mypy checks each
key and literal of those dicts against the schema. :data:`ROOTS` names the
definitions generated, each with why; what they refer to is generated with
them, under the schema's names.
Keys stay camelCase, as on the wire; an optional field is ``NotRequired``; a
``const`` or ``enum`` is a ``Literal``; an id is ``str``. A definition that is
one variant of a tagged union (``sessionUpdate``, ``type``, ...) carries its
tag. Union members titled ``other`` (custom or future values) are ``str`` in
what the door reads and left out of what it sends, which is only what the
schema names. A schema keyword with no Python meaning here is an error naming
where it is. ``python3 -m oma_host.cli.acp_types`` rewrites
``oma_host/acp_server/wire_v1.py``; a test fails when the checked-in file differs.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oma_host.cli.schema import ROOT

SCHEMA_V1_PATH = (
    ROOT
    / "tests"
    / "acp_server"
    / "client"
    / "node_modules"
    / "@agentclientprotocol"
    / "sdk"
    / "schema"
    / "v1"
    / "schema.json"
)
WIRE_PATH = ROOT / "oma_host" / "acp_server" / "wire_v1.py"
MODULE = "oma_host.cli.acp_types"
WIDTH = 100  # the project's line length


@dataclass(frozen=True)
class Root:
    """A definition generated because the door sends or reads it by hand."""

    why: str
    # The door reads it from the client: its ``other`` members are kept.
    reads: bool = False
    # For a definition whose own ``anyOf`` lists modes or scopes: the members
    # (tag or title) the door sends; empty for all the schema names.
    members: tuple[str, ...] = ()


# What the door builds or reads as plain dicts: what the Python package
# (0.12.1) lacks, and what the door keeps as plain dicts although it has a
# model, each for the reason given.
ROOTS: dict[str, Root] = {
    "CompactionUpdate": Root(
        "the `compaction_update` the door sends (updates.compaction_update); 0.12.1 has no model"
    ),
    "Notice": Root(
        "the `notice` update the door sends (updates.notice_update); 0.12.1 has no model"
    ),
    "ContentChunk": Root(
        "the message and thought chunks of every text delta and of a replay, with their"
        " `messageId` (updates._chunk, updates.replayed_update): built as plain dicts for"
        " speed; tests/acp_server/test_wire_forms.py holds them equal to 0.12.1's models'"
        " dumps"
    ),
    "CreateElicitationRequest": Root(
        "the `elicitation/create` the door sends (editor.EditorClient.elicit): an MCP"
        " server's form, tied to the session; a plain dict because 0.12.1's"
        " CreateFormSessionElicitationRequest would rewrite the server's `requestedSchema`"
        " (it drops keys it does not model and ones equal to its defaults)",
        members=("form", "Session"),
    ),
    "CreateElicitationResponse": Root(
        "the answer the door gives the MCP server (editor.EditorClient.elicit): one of the"
        " actions the schema names, built from the editor's answer, which is read leniently"
        " (what is not `accept` or `decline` is `cancel`) rather than refused by a model"
    ),
    "ClientSessionCapabilities": Root(
        "`clientCapabilities.session`, read from the wire form (updates.ClientFeatures);"
        " 0.12.1's model lacks its `compaction` and `notices`",
        reads=True,
    ),
    "ElicitationCapabilities": Root(
        "`clientCapabilities.elicitation`, read with `session` from the wire form"
        " routes.py passes (updates.ClientFeatures), although 0.12.1 models it",
        reads=True,
    ),
}

# Definitions typed as plain JSON objects, and why.
OPAQUE: dict[str, str] = {
    "ElicitationSchema": (
        "the MCP server's `requestedSchema`, relayed as the server sent it"
        " (the MCP SDK has validated it)"
    ),
}

# Keywords that narrow values (or only annotate), not types.
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
        "uniqueItems",
        "pattern",
        "format",
        "discriminator",
        # The ``other`` members' exclusion of the named ones, and their leave
        # to carry more: neither changes the fields a TypedDict names.
        "not",
        "unevaluatedProperties",
    }
)
_TYPED = frozenset(
    {
        "$ref",
        "const",
        "enum",
        "anyOf",
        "oneOf",
        "allOf",
        "type",
        "items",
        "properties",
        "required",
        "additionalProperties",
    }
)
_PRIMITIVES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "null": "None",
}
_DEFS = "#/$defs/"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
OTHER = "other"

HEADER = f'''\
"""The ACP stable v1 wire types of the forms the door builds or reads as plain
dicts (the list below says why each), GENERATED from the v1 schema of
``@agentclientprotocol/sdk`` (tests/acp_server/client/package.json pins it)
by ``python3 -m {MODULE}``: do not edit this file; a test
fails while it differs from what the command writes.

Keys are the wire's (camelCase). What the door sends has only the values the
schema names; what it reads keeps the schema's open ``other`` members as ``str``.
docs/acp.md, "Against the stable schema".
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict
'''


class SchemaError(ValueError):
    """A schema construct this generator cannot write as a Python type."""


def _literal(value: Any) -> str:
    if isinstance(value, str | int | bool) or value is None:
        return json.dumps(value) if isinstance(value, str) else repr(value)
    raise SchemaError(f"no Literal for {value!r}")


def _camel(text: str) -> str:
    """``in_progress`` -> ``InProgress``, ``Session`` -> ``Session``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", text))


def _wrap(text: str, indent: str, lead: str) -> list[str]:
    """``text`` in lines of at most WIDTH, each starting ``indent + lead``."""
    room = WIDTH - len(indent) - len(lead)
    lines: list[str] = []
    for line in text.strip().splitlines():
        lines.extend(textwrap.wrap(line, room, break_on_hyphens=False) or [""])
    return [f"{indent}{lead}{line}".rstrip() for line in lines]


def _docstring(text: str | None, indent: str) -> list[str]:
    """``text`` as a docstring: its first line after the opening quotes."""
    if not text:
        return []
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    # Each line leaves room for the quotes either side (ruff format puts the
    # closing ones after a single line).
    quotes = '""""""'
    lines = [(indent + line[len(indent) + 6 :]).rstrip() for line in _wrap(text, indent, quotes)]
    if len(lines) == 1:
        return [f'{indent}"""{lines[0].strip()}"""']
    return [f'{indent}"""{lines[0].strip()}', *lines[1:], f'{indent}"""']


def _comment(text: str | None, indent: str) -> list[str]:
    return _wrap(text, indent, "# ") if text else []


def _union(members: list[str], values: list[Any] | None = None) -> str:
    """``A | B``: the ``values`` of its literal members as one ``Literal[...]``
    first, None last."""
    literal = [_literal(value) for value in dict.fromkeys(values or [])]
    unique = list(dict.fromkeys(members))
    if literal:
        unique.insert(0, f"Literal[{', '.join(literal)}]")
    if not unique:
        raise SchemaError("an empty union")
    if "None" in unique:
        unique = [*(member for member in unique if member != "None"), "None"]
    return " | ".join(unique)


def _check(schema: Any, where: str) -> dict[str, Any]:
    if not isinstance(schema, dict):
        raise SchemaError(f"{where}: a schema must be an object, not {schema!r}")
    unknown = sorted(key for key in set(schema) - _NO_TYPE - _TYPED if not key.startswith("x-"))
    if unknown:
        raise SchemaError(f"{where}: no Python type for the keyword {unknown[0]!r}")
    return schema


def _tagged(member: Any) -> tuple[str, Any, str] | None:
    """A tagged union member ``{properties: {key: {const}}, required: [key],
    allOf: [{$ref}]}``: its key, tag and the definition it is; else None."""
    if not isinstance(member, dict) or set(member) - _NO_TYPE - {
        "type",
        "properties",
        "required",
        "allOf",
    }:
        return None
    properties = member.get("properties", {})
    parts = member.get("allOf", [])
    if len(properties) != 1 or len(parts) != 1 or "$ref" not in parts[0]:
        return None
    ((key, tag),) = properties.items()
    if "const" not in tag or member.get("required") != [key]:
        return None
    return key, tag["const"], str(parts[0]["$ref"]).removeprefix(_DEFS)


def _tags(node: Any, tags: dict[str, dict[str, list[Any]]]) -> None:
    """Every definition that is a tagged union's member: its tag key and values."""
    if isinstance(node, list):
        for item in node:
            _tags(item, tags)
    if not isinstance(node, dict):
        return
    for union in ("anyOf", "oneOf"):
        for member in node.get(union, []):
            found = _tagged(member)
            if found is not None:
                key, tag, name = found
                tags.setdefault(name, {}).setdefault(key, []).append(tag)
    for value in node.values():
        _tags(value, tags)


@dataclass
class _Part:
    """One combination of an object's members, flattened: its fields."""

    names: list[str] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)

    def merge(self, other: _Part) -> _Part:
        return _Part(
            [*self.names, *other.names],
            {**self.properties, **other.properties},
            self.required | other.required,
        )


class _Writer:
    """Writes definitions as TypedDicts and aliases, each after what it uses."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs
        self.tags: dict[str, dict[str, list[Any]]] = {}
        _tags(dict(defs), self.tags)
        self.blocks: list[list[str]] = []
        self.done: dict[str, bool] = {}  # name: reads; False while being written
        self.writing: set[str] = set()

    # -- types ------------------------------------------------------------------

    def type(self, schema: Any, where: str, reads: bool) -> str:
        if schema is True or schema == {}:
            return "Any"
        schema = _check(schema, where)
        if "$ref" in schema:
            if str(schema["$ref"]).removeprefix(_DEFS) in self.tags:
                raise SchemaError(f"{where}: a tagged union's member used without its tag")
            return self.ref(schema["$ref"], where, reads)
        if "const" in schema:
            return f"Literal[{_literal(schema['const'])}]"
        if "enum" in schema:
            return f"Literal[{', '.join(_literal(value) for value in schema['enum'])}]"
        if "allOf" in schema:
            parts = schema["allOf"]
            if len(parts) != 1 or set(schema) & {"properties", "anyOf", "oneOf", "type"}:
                raise SchemaError(f"{where}: allOf beside other types needs a named object")
            return self.type(parts[0], f"{where}/allOf/0", reads)
        for union in ("anyOf", "oneOf"):
            if union in schema:
                return self.union(schema[union], f"{where}/{union}", reads)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union([self.type({**schema, "type": one}, where, reads) for one in kind])
        if kind == "array":
            return f"list[{self.type(schema.get('items', True), f'{where}/items', reads)}]"
        if kind == "object" or "properties" in schema:
            if schema.get("properties"):
                raise SchemaError(f"{where}: an object with fields must be a definition")
            extra = schema.get("additionalProperties", True)
            values = (
                "Any" if extra is True else self.type(extra, f"{where}/additionalProperties", reads)
            )
            return f"dict[str, {values}]"
        if kind is None:
            return "Any"
        if kind not in _PRIMITIVES:
            raise SchemaError(f"{where}: no Python type for the type {kind!r}")
        return _PRIMITIVES[kind]

    def union(self, members: list[Any], where: str, reads: bool) -> str:
        kinds: list[str] = []
        values: list[Any] = []  # the members that are one value each
        for index, member in enumerate(members):
            if isinstance(member, dict) and member.get("title") == OTHER and not reads:
                continue  # the door sends only what the schema names
            tagged = _tagged(member)
            if tagged is not None:
                kinds.append(self.ref(_DEFS + tagged[2], f"{where}/{index}", reads))
            elif isinstance(member, dict) and "const" in member and "$ref" not in member:
                values.append(_check(member, f"{where}/{index}")["const"])
            else:
                kinds.append(self.type(member, f"{where}/{index}", reads))
        return _union(kinds, values)

    def ref(self, ref: str, where: str, reads: bool) -> str:
        name = ref.removeprefix(_DEFS)
        if not ref.startswith(_DEFS) or name not in self.defs:
            raise SchemaError(f"{where}: $ref {ref!r} names no entry of $defs")
        self.declare(name, reads)
        return name

    # -- definitions -------------------------------------------------------------

    def declare(self, name: str, reads: bool, members: tuple[str, ...] = ()) -> None:
        """Write definition ``name`` once, after the definitions it uses."""
        if name in self.done:
            if self.done[name] != reads:
                raise SchemaError(f"$defs/{name}: both sent and read; generate it one way")
            return
        if name in self.writing:
            raise SchemaError(f"$defs/{name}: refers to itself")
        self.writing.add(name)
        where = f"$defs/{name}"
        schema = _check(self.defs[name], where)
        if name in OPAQUE:
            lines = [
                f"{name} = dict[str, Any]",
                *_docstring(
                    f"{schema.get('description', '')}\n\nA plain object: {OPAQUE[name]}.", ""
                ),
            ]
        elif schema.get("properties") or (schema.get("type") == "object" and "anyOf" in schema):
            lines = self.objects(name, schema, where, reads, members)
        else:
            lines = [f"{name} = {self.type(schema, where, reads)}"]
            lines.extend(_docstring(schema.get("description"), ""))
        self.writing.discard(name)
        self.done[name] = reads
        self.blocks.append(lines)

    def flatten(
        self, schema: dict[str, Any], where: str, reads: bool, members: tuple[str, ...]
    ) -> list[_Part]:
        """An object's fields with its ``allOf`` parts', one :class:`_Part`
        for each combination of its ``anyOf`` members the door uses."""
        parts = [_Part([], dict(schema.get("properties", {})), set(schema.get("required", [])))]
        for index, part in enumerate(schema.get("allOf", [])):
            part = _check(part, f"{where}/allOf/{index}")
            if "$ref" in part:
                name = part["$ref"].removeprefix(_DEFS)
                if name not in self.defs:
                    raise SchemaError(f"{where}/allOf/{index}: $ref names no entry of $defs")
                part = _check(self.defs[name], f"$defs/{name}")
                if name in OPAQUE:
                    raise SchemaError(f"{where}/allOf/{index}: an opaque definition's fields")
            found = self.flatten(part, f"{where}/allOf/{index}", reads, members)
            parts = [mine.merge(theirs) for mine in parts for theirs in found]
        for union in ("anyOf", "oneOf"):
            options: list[_Part] = []
            for index, member in enumerate(schema.get(union, [])):
                label = _label(member)
                if members and label not in members:
                    continue
                if not members and label == OTHER and not reads:
                    continue
                found = self.flatten(member, f"{where}/{union}/{index}", reads, members)
                options.extend(
                    _Part([label, *one.names], one.properties, one.required) for one in found
                )
            if union in schema:
                if not options:
                    raise SchemaError(f"{where}/{union}: none of the members {members}")
                parts = [mine.merge(theirs) for mine in parts for theirs in options]
        return parts

    def objects(
        self, name: str, schema: dict[str, Any], where: str, reads: bool, members: tuple[str, ...]
    ) -> list[str]:
        """A TypedDict per combination of the object's members, and their
        union under ``name`` when there are several."""
        parts = self.flatten(schema, where, reads, members)
        tags = self.tags.get(name, {})
        if len(tags) > 1:
            raise SchemaError(f"{where}: a member of unions tagged {sorted(tags)}")
        lines: list[str] = []
        names: list[str] = []
        for part in parts:
            typed = name if len(parts) == 1 else name + "".join(_camel(one) for one in part.names)
            names.append(typed)
            head: dict[str, Any] = {}
            for key, values in tags.items():  # its tag first, as the wire puts it
                head[key] = {"enum": values}
                part.required.add(key)
            lines.extend(
                self.typeddict(typed, schema, part, {**head, **part.properties}, where, reads)
            )
            lines.append("")
        if len(parts) > 1:
            lines.append(f"{name} = {' | '.join(names)}")
            lines.extend(_docstring(schema.get("description"), ""))
        elif lines:
            lines.pop()
        return lines

    def typeddict(
        self,
        name: str,
        schema: dict[str, Any],
        part: _Part,
        properties: dict[str, Any],
        where: str,
        reads: bool,
    ) -> list[str]:
        body: list[str] = []
        for key, field_schema in properties.items():
            if not _IDENTIFIER.fullmatch(key) or keyword.iskeyword(key):
                raise SchemaError(f"{where}/properties/{key}: not a Python identifier")
            kind = self.type(field_schema, f"{where}/properties/{key}", reads)
            if key not in part.required:
                kind = f"NotRequired[{kind}]"
            body.extend(_comment(field_schema.get("description"), "    "))
            body.append(f"    {key}: {kind}")
        described = schema.get("description", "")
        if part.names:
            described += f"\n\nThis form: {', '.join(part.names)}."
        return [
            f"class {name}(TypedDict):",
            *(_docstring(described, "    ") or ['    """(no description)"""']),
            *([""] if body else []),
            *body,
        ]


def _label(member: Any) -> str:
    """A union member's name: its title, else its tag's value."""
    if not isinstance(member, dict):
        return ""
    if "title" in member:
        return str(member["title"])
    for key in member.get("required", []):
        tag = member.get("properties", {}).get(key, {})
        if "const" in tag:
            return str(tag["const"])
    return ""


def generate(schema: Mapping[str, Any], roots: Mapping[str, Root] = ROOTS) -> str:
    """The module for ``schema`` (the v1 schema.json), unformatted."""
    writer = _Writer(schema["$defs"])
    lines: list[str] = []
    for name, root in roots.items():
        if name not in schema["$defs"]:
            raise SchemaError(f"ROOTS: {name!r} names no entry of $defs")
        writer.declare(name, root.reads, root.members)
    why = [f"{name}: {root.why}." for name, root in roots.items()]
    lines = [
        "",
        "# Generated for what the door sends or reads as plain dicts:",
        *(line for text in why for line in _wrap(text, "", "# ")),
    ]
    body = "\n\n\n".join("\n".join(block) for block in writer.blocks)
    return HEADER + "\n".join(lines) + "\n\n\n" + body + "\n"


def _formatted(text: str) -> str:
    """``text`` as ``ruff format`` writes it, with the project's settings."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(WIRE_PATH), "-"],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise SchemaError(f"ruff format failed: {done.stderr.strip()}")
    return done.stdout


def render(path: Path = SCHEMA_V1_PATH) -> str:
    """The file as the pinned schema generates it, formatted."""
    return _formatted(generate(json.loads(path.read_text(encoding="utf-8"))))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python3 -m {MODULE}",
        description="Write the ACP door's v1 wire types from the pinned ACP schema.",
    )
    parser.add_argument(
        "--schema",
        type=Path,
        default=SCHEMA_V1_PATH,
        help="the v1 schema.json (default: the one the test dependencies pin)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=WIRE_PATH,
        help=f"where to write them (default: {WIRE_PATH.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    if not args.schema.is_file():
        parser.error(f"no schema at {args.schema}: run `npm ci` in tests/acp_server/client")
    args.out.write_text(render(args.schema), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
