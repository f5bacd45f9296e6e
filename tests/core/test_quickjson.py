"""``oma_host.core.quickjson``: the same values and bytes as ``json`` (with
NaN and Infinity refused), and an error that says what is wrong even in an
interpreter that has not imported ``json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_host.core import quickjson

VALUES: list[Any] = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
    [1, -2.5e3, "caf\u00e9 \U0001f600", True, False, None, {"": []}],
    'line\nbreak "quoted" \\ slash',
    12345678901234567890,
    [],
]


@pytest.mark.parametrize("value", VALUES)
def test_values_and_bytes_are_jsons(value: Any) -> None:
    text = json.dumps(value)
    assert quickjson.loads(text) == json.loads(text)
    assert quickjson.loads(f" \n{text}\r\n") == value
    assert quickjson.dumps(value) == json.dumps(value, separators=(",", ":"))


@pytest.mark.parametrize("text", ["", " ", "{", "[1] x", "[1,]", "NaN", "[Infinity]", "{'a':1}"])
def test_what_is_not_json_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        quickjson.loads(text)


def test_nan_is_not_written() -> None:
    with pytest.raises(ValueError):
        quickjson.dumps([float("nan")])
    with pytest.raises(ValueError, match="object is not JSON"):
        quickjson.dumps({"a": object()})


def test_an_error_says_where_without_json_imported_first() -> None:
    """The C codec can raise its error only once json.decoder is imported."""
    probe = (
        "import sys\n"
        "from oma_host.core import quickjson\n"
        "assert 'json' not in sys.modules\n"
        "try:\n"
        "    quickjson.loads('[{')\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr
    expected = "Expecting property name enclosed in double quotes: line 1 column 3 (char 2)"
    assert done.stdout.strip() == expected
