"""The ACP Registry entry (``packaging/acp-registry/oma-host/``): valid
against the registry's own ``agent.schema.json``, its version and pinned
package the package's own, and a 16x16 icon drawn in ``currentColor``, as
the registry asks of an icon.

The schema is vendored beside this test, unchanged:
``acp_registry/agent.schema.json`` is the registry's
https://cdn.agentclientprotocol.com/registry/v1/latest/agent.schema.json
(its ``$id``), so a clone with nothing beside it runs this test."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import jsonschema

from oma_host.cli.schema import ROOT
from oma_host.core.version import __version__

ENTRY = ROOT / "packaging" / "acp-registry" / "oma-host"
REGISTRY_SCHEMA = Path(__file__).resolve().parent / "acp_registry" / "agent.schema.json"


def _entry() -> dict[str, Any]:
    entry: dict[str, Any] = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    return entry


def test_the_entry_validates_against_the_registrys_schema() -> None:
    schema = json.loads(REGISTRY_SCHEMA.read_text(encoding="utf-8"))
    assert schema["$id"].endswith("/registry/v1/latest/agent.schema.json")
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(_entry())]
    assert not errors
    # And the check can fail: an entry without its distribution does not pass.
    broken = {key: value for key, value in _entry().items() if key != "distribution"}
    assert list(validator.iter_errors(broken))


def test_the_entry_is_the_packages_version_run_as_the_acp_door() -> None:
    entry = _entry()
    assert entry["version"] == __version__
    assert entry["distribution"] == {
        "uvx": {"package": f"oma-host=={__version__}", "args": ["acp"]}
    }


def test_the_icon_is_16_by_16_in_current_color() -> None:
    icon = ENTRY / _entry()["icon"]
    root = ElementTree.fromstring(icon.read_text(encoding="utf-8"))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert (root.get("width"), root.get("height"), root.get("viewBox")) == ("16", "16", "0 0 16 16")
    colours = {
        element.get(attribute)
        for element in root.iter()
        for attribute in ("fill", "stroke", "color", "stop-color")
        if element.get(attribute) is not None
    }
    assert colours <= {"none", "currentColor"}, colours
    assert "currentColor" in colours
    assert "style" not in icon.read_text(encoding="utf-8")  # no colour hidden in CSS
