"""``oma_host/acp_server/wire_v1.py``: the ACP door's generated wire types
are what the pinned v1 schema generates, mypy holds a form built with them
to the schema, and the generator refuses a schema it cannot write rather
than typing it ``Any``."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import acp.schema
import pytest

from oma_host.cli.acp_types import (
    ROOTS,
    SCHEMA_V1_PATH,
    WIRE_PATH,
    Root,
    SchemaError,
    generate,
    render,
)
from oma_host.cli.schema import ROOT

SCHEMA: dict[str, Any] = json.loads(SCHEMA_V1_PATH.read_text(encoding="utf-8"))


def test_the_checked_in_types_are_what_the_pinned_schema_generates() -> None:
    assert WIRE_PATH.read_text(encoding="utf-8") == render(), (
        "oma_host/acp_server/wire_v1.py is stale: run `python3 -m oma_host.cli.acp_types`"
    )


def test_the_command_writes_the_file_where_it_is_told(tmp_path: Path) -> None:
    out = tmp_path / "wire_v1.py"
    done = subprocess.run(
        [sys.executable, "-m", "oma_host.cli.acp_types", "--out", str(out)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") == WIRE_PATH.read_text(encoding="utf-8")


def test_every_root_is_declared_with_its_tag() -> None:
    text = generate(SCHEMA)
    for name in ROOTS:
        assert f"class {name}(TypedDict):" in text or f"\n{name} = " in text, name
    update = text.split("class CompactionUpdate(TypedDict):")[1].split("\nclass ")[0]
    assert '    sessionUpdate: Literal["compaction_update"]\n' in update
    assert "    compactionId: CompactionId\n" in update
    assert "    summary: NotRequired[list[ContentBlock] | None]\n" in update
    chunk = text.split("class ContentChunk(TypedDict):")[1].split("\nclass ")[0]
    assert "    messageId: NotRequired[MessageId | None]\n" in chunk
    assert (
        '    sessionUpdate: Literal["user_message_chunk", "agent_message_chunk",'
        ' "agent_thought_chunk"]\n' in chunk
    )


def test_what_the_door_sends_is_closed_and_what_it_reads_is_open() -> None:
    """The schema's ``other`` members: left out of a sent type, ``str`` in a read one."""
    text = generate(SCHEMA)
    assert '\nCompactionStatus = Literal["in_progress", "completed", "failed", "cancelled"]\n' in (
        text
    )
    assert '\nNoticeSeverity = Literal["info", "warning", "error"]\n' in text
    request = text.split("class CreateElicitationRequest(TypedDict):")[1].split("\nclass ")[0]
    assert '    mode: Literal["form"]\n' in request
    assert "    sessionId: SessionId\n" in request
    assert "requestId" not in request and "class CreateElicitationRequestUrl" not in text
    assert "class CreateElicitationResponseOther" not in text
    assert (
        "CreateElicitationResponse = (\n    CreateElicitationResponseAccept\n"
        "    | CreateElicitationResponseDecline\n    | CreateElicitationResponseCancel\n)"
    ) in render()
    read = generate(SCHEMA, {"CreateElicitationResponse": Root("read", reads=True)})
    other = read.split("class CreateElicitationResponseOther(TypedDict):")[1].split("\n\n\n")[0]
    assert "    action: str\n" in other
    assert "| CreateElicitationResponseOther\n" in read
    statuses = generate(SCHEMA, {"CompactionStatus": Root("read", reads=True)})
    assert (
        'CompactionStatus = Literal["in_progress", "completed", "failed", "cancelled"] | str'
        in (statuses)
    )


def test_a_change_to_the_schema_changes_the_types() -> None:
    changed = copy.deepcopy(SCHEMA)
    status = changed["$defs"]["CompactionStatus"]["anyOf"]
    status.insert(-1, {"type": "string", "const": "paused"})
    changed["$defs"]["Notice"]["required"].append("description")
    text = generate(changed)
    assert '"cancelled", "paused"]' in text
    assert "    description: str | None\n" in text


def test_a_form_with_a_wrong_literal_or_a_missing_key_fails_mypy(tmp_path: Path) -> None:
    """What the types are for: mypy --strict refuses a typo in a status, a
    missing required key and an unknown one, and takes the right form."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        textwrap.dedent(
            """\
            from oma_host.acp_server.wire_v1 import CompactionUpdate, Notice

            good: CompactionUpdate = {
                "sessionUpdate": "compaction_update",
                "compactionId": "c1",
                "status": "in_progress",
            }
            typo: CompactionUpdate = {
                "sessionUpdate": "compaction_update",
                "compactionId": "c1",
                "status": "in_progres",
            }
            missing: Notice = {"sessionUpdate": "notice", "severity": "info"}
            unknown: Notice = {
                "sessionUpdate": "notice", "severity": "info", "title": "t", "level": 1
            }
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(probe),
        ],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["11", "13", "14"], done.stdout
    assert "'in_progres'" in errors[0]
    assert '"title"' in errors[1]
    assert '"level"' in errors[2]


def _broken(path: list[str], value: Any) -> dict[str, Any]:
    schema = copy.deepcopy(SCHEMA)
    where = schema
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return schema


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ["$defs", "Notice", "properties", "title", "patternProperties"],
            {},
            "$defs/Notice/properties/title: no Python type for the keyword 'patternProperties'",
        ),
        (
            ["$defs", "Notice", "properties", "severity"],
            {"$ref": "#/$defs/Nowhere"},
            "$defs/Notice/properties/severity: $ref '#/$defs/Nowhere' names no entry of $defs",
        ),
        (
            ["$defs", "Notice", "properties", "title", "type"],
            "date",
            "$defs/Notice/properties/title: no Python type for the type 'date'",
        ),
        (
            ["$defs", "Notice", "properties", "title"],
            {"$ref": "#/$defs/TextContent"},
            "$defs/Notice/properties/title: a tagged union's member used without its tag",
        ),
        (
            ["$defs", "Notice", "properties", "title"],
            {"type": "object", "properties": {"text": {"type": "string"}}},
            "$defs/Notice/properties/title: an object with fields must be a definition",
        ),
    ],
)
def test_a_schema_it_cannot_write_is_an_error_naming_where(
    path: list[str], value: Any, message: str
) -> None:
    with pytest.raises(SchemaError) as raised:
        generate(_broken(path, value))
    assert str(raised.value) == message


def test_a_root_the_schema_lacks_or_a_member_it_does_not_name_is_an_error() -> None:
    with pytest.raises(SchemaError, match="ROOTS: 'Nothing' names no entry of \\$defs"):
        generate(SCHEMA, {"Nothing": Root("no reason")})
    with pytest.raises(SchemaError, match="CreateElicitationRequest/anyOf: none of the members"):
        generate(SCHEMA, {"CreateElicitationRequest": Root("a mode", members=("fax",))})
    both = {"ElicitationCapabilities": Root("read", reads=True), "ClientCapabilities": Root("sent")}
    with pytest.raises(SchemaError, match="both sent and read"):
        generate(SCHEMA, both)


def test_what_the_roots_say_the_package_lacks_it_lacks() -> None:
    """A newer ``agent-client-protocol`` that models these fails here: use
    its models for them, and take them out of ROOTS."""
    assert not hasattr(acp.schema, "CompactionUpdate")
    assert not hasattr(acp.schema, "Notice")
    fields = acp.schema.ClientSessionCapabilities.model_fields
    assert {"compaction", "notices"}.isdisjoint(fields)
    assert "0.12.1" in ROOTS["ClientSessionCapabilities"].why
