"""A stream's ``$/progress`` notifications (``Connection.notifier``, the
relay's path) are the very bytes ``Connection.notify`` writes for the same
message, whatever the event holds, and the size limit applies alike."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oma_host.server.registry import Notification
from oma_host.server.rpc import Connection
from oma_host.wire.framing import Framing

# Text with non-ASCII characters, JSON escapes and lone surrogates.
_TEXT = st.text(alphabet=st.sampled_from('ab"\\\n\x00é€😀\ud800\udfff/'), max_size=10)
_VALUE = st.one_of(
    st.builds(lambda k, d: {"type": k, "data": d}, _TEXT, _TEXT),
    st.builds(lambda k, d: {"data": d, "type": k}, _TEXT, _TEXT),  # the other key order
    st.builds(lambda d: {"type": "tool_use", "data": {"id": d, "input": [1, 2.5, None]}}, _TEXT),
    st.builds(lambda k: {"type": k, "data": 3}, _TEXT),
    st.builds(lambda k, d: {"type": k, "data": d, "extra": True}, _TEXT, _TEXT),
    st.builds(lambda k: {"kind": k}, _TEXT),
    _TEXT,
    st.none(),
)


def _pair(
    limit: int = 10**6, framing: Framing = "lsp"
) -> tuple[list[bytes], Connection, list[bytes], Connection]:
    ours: list[bytes] = []
    theirs: list[bytes] = []
    fast, plain = (
        Connection(ours.append, max_message_bytes=limit),
        Connection(theirs.append, max_message_bytes=limit),
    )
    fast.use_framing(framing)
    plain.use_framing(framing)
    return ours, fast, theirs, plain


@given(
    values=st.lists(_VALUE, max_size=5),
    token=st.one_of(st.integers(), _TEXT),
    framing=st.sampled_from(["lsp", "ndjson"]),
)
def test_the_notifier_writes_what_notify_writes(
    values: list[Any], token: int | str, framing: Framing
) -> None:
    ours, fast, theirs, plain = _pair(framing=framing)
    send = fast.notifier(Notification.PROGRESS, token)
    for value in values:
        send(value)
        plain.notify(Notification.PROGRESS, {"token": token, "value": value})
    fast.flush()
    plain.flush()
    assert b"".join(ours) == b"".join(theirs)


def test_a_notification_over_the_limit_is_left_out_by_both() -> None:
    ours, fast, theirs, plain = _pair(limit=200)
    send = fast.notifier(Notification.PROGRESS, "t")
    for data in ("short", "x" * 300, "again"):
        send({"type": "text", "data": data})
        plain.notify(Notification.PROGRESS, {"token": "t", "value": {"type": "text", "data": data}})
    fast.flush()
    plain.flush()
    assert b"".join(ours) == b"".join(theirs)
    assert b"short" in b"".join(ours) and b"again" in b"".join(ours)
    assert b"xxx" not in b"".join(ours)
