"""The id of a JSON-RPC message too large to parse, recovered from its first and last bytes.

Dependency-free: the JSON-RPC door's startup path imports it.
"""

from __future__ import annotations

import json
import re


def _top_level_members(head: bytes) -> dict[str, bytes]:
    """The members of the top-level object seen in ``head`` (key → raw value
    start), found with a small scanner that follows strings and nesting, so a
    nested ``"id"`` (a tool_use id, say) is never mistaken for the request's."""
    members: dict[str, bytes] = {}
    depth = 0
    index = 0
    expecting_key = False
    size = len(head)
    while index < size:
        char = head[index]
        if char == 0x22:  # a string
            end = index + 1
            while end < size and head[end] != 0x22:
                end += 2 if head[end] == 0x5C else 1
            if end >= size:
                break
            if depth == 1 and expecting_key:
                key = head[index + 1 : end].decode(errors="replace")
                rest = head[end + 1 :].lstrip()
                if rest[:1] == b":":
                    members[key] = rest[1:].lstrip()[:200]
            index = end + 1
            expecting_key = False
            continue
        if char in b"{[":
            depth += 1
            expecting_key = char == 0x7B and depth == 1
        elif char in b"}]":
            depth -= 1
        elif char == 0x2C and depth == 1:  # a comma between top-level members
            expecting_key = True
        index += 1
    return members


_LAST_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$')


def _id_value(raw: bytes) -> int | str | None:
    match = _ID_VALUE.match(raw)
    if not match:
        return None
    try:
        value = json.loads(match.group(0))
    except ValueError:
        return None
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


_ID_VALUE = re.compile(rb'-?\d+|"(?:[^"\\]|\\.)*"')


def recover_id(head: bytes, tail: bytes) -> tuple[int | str | None, bool]:
    """The top-level id of a frame too large to parse, from its first and last
    bytes, and whether the frame is a response (which is never answered)."""
    members = _top_level_members(head)
    is_response = "method" not in members and ("result" in members or "error" in members)
    if "id" in members:
        return _id_value(members["id"]), is_response
    # An id that is the last member: it stands right before the final brace.
    match = _LAST_ID.search(tail)
    return (_id_value(match.group(1)) if match else None), is_response
