"""The store keeps an external backend's own session id (an ACP agent's
``sessionId``) with the host's session: read back by another connection,
forgotten with the history, never kept for a session that was not created."""

from __future__ import annotations

from pathlib import Path

from oma_host.orchestration.store import Store


def test_the_backend_session_id_is_kept_replaced_and_forgotten(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.create_session("s1", "coder", [])
    assert store.backend_session("s1") is None
    store.put_backend_session("s1", "sess-a")
    assert Store(tmp_path).backend_session("s1") == "sess-a"  # another host sees it
    store.put_backend_session("s1", "sess-b")
    assert store.backend_session("s1") == "sess-b"
    store.clear_session("s1")  # agent/reset: the ACP session goes with the history
    assert store.backend_session("s1") is None
    store.put_backend_session("s1", "sess-c")
    store.put_backend_session("s1", None)
    assert store.backend_session("s1") is None


def test_an_unknown_session_keeps_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.put_backend_session("never-created", "sess-x")
    assert store.backend_session("never-created") is None
