"""The ACP door's sessions in the store, read back for ``session/load`` and ``session/list``.

A session is stored like a JSON-RPC session (each turn committed before the
prompt is answered) plus its ``cwd``, title and settings, so a new process can
restore it and list it a page at a time.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import os
import shutil
from datetime import UTC, datetime
from typing import Any, NoReturn, Protocol

from acp import RequestError
from acp.schema import SessionInfo

from oma_host.core.config import AgentConfig
from oma_host.core.history import HistoryChange, TurnSink
from oma_host.core.messages import LLMMessage
from oma_host.core.redact import Redactor
from oma_host.orchestration.store import Store

TITLE_CHARS = 80
# The settings' key of a session's additional directories.
DIRECTORIES_SETTING = "additionalDirectories"
# Sessions in one page of session/list.
LIST_PAGE = 50


class StoredSession(Protocol):
    """What the storage reads of a live session (and its title, which the
    first prompt sets)."""

    session_id: str
    cwd: str
    config: AgentConfig
    title: str | None

    @property
    def settings(self) -> dict[str, Any]: ...


def unknown_session(session_id: str) -> RequestError:
    return RequestError.invalid_params(
        {
            "type": "SessionNotFound",
            "sessionId": session_id,
            "message": f"no session {session_id!r} (session/list shows those stored)",
        }
    )


def refuse(message: str) -> NoReturn:
    """An ACP request refused with -32602 and ``message``."""
    raise RequestError.invalid_params({"type": "InvalidParams", "message": message})


class SessionStorage:
    """The door's sessions in the store, which is opened on first use."""

    def __init__(self, state_dir: str | None) -> None:
        self._state_dir = state_dir
        self._store: Store | None = None

    async def store(self) -> Store:
        """The store, opened on first use; a state directory that cannot be
        used (a link, another user's, unwritable) is -32603 naming it and why,
        a refusal like any other rather than a crash with a traceback."""
        if self._store is None:
            try:
                self._store = await asyncio.to_thread(Store, self._state_dir)
            except OSError as error:  # StoreError and FolderError are OSErrors
                raise RequestError(
                    -32603,
                    f"the state directory cannot be used: {error}",
                    {
                        "type": "StoreError",
                        "message": f"the state directory cannot be used: {error}",
                    },
                ) from None
        return self._store

    async def create(self, session: StoredSession, history: list[LLMMessage]) -> None:
        """Store a new session holding ``history``, and its info."""
        store = await self.store()
        redact = Redactor.for_config(session.config).redact_tree
        await asyncio.to_thread(
            store.create_session, session.session_id, session.config.name, history, redact
        )
        await asyncio.to_thread(
            store.put_session_info, session.session_id, session.cwd, session.settings, session.title
        )

    async def checkpoints(self, session_id: str) -> str | None:
        """The shadow repository of the session's workspace checkpoints
        (None for a store kept in memory)."""
        return (await self.store()).checkpoint_repository(session_id)

    async def marks(self, session_id: str) -> list[str | None]:
        """The checkpoint beside each stored message of the session."""
        store = await self.store()
        return await asyncio.to_thread(store.session_checkpoints, session_id)

    async def stored(self, session_id: str) -> tuple[list[LLMMessage], dict[str, Any]]:
        """A stored session's history and info (SessionNotFound without)."""
        store = await self.store()
        history = await asyncio.to_thread(store.load_session, session_id)
        infos = await asyncio.to_thread(store.session_infos, session_id)
        if history is None or not infos:
            raise unknown_session(session_id)
        return history, infos[0]

    async def save_settings(self, session: StoredSession) -> None:
        store = await self.store()
        await asyncio.to_thread(
            store.put_session_info, session.session_id, session.cwd, session.settings
        )

    def turn_sink(self, session: StoredSession, config: AgentConfig) -> TurnSink:
        """What commits each completed turn (or compaction) of ``session``'s
        agent, with ``config``'s secrets taken out; the first prompt's text
        becomes the session's title."""
        redactor = Redactor.for_config(config)
        redact = redactor.redact_tree

        async def commit(change: HistoryChange) -> None:
            store = await self.store()
            marks = change.marks
            if change.history is not None:
                history = change.history
                await asyncio.to_thread(
                    store.replace_history, session.session_id, history, redact, marks
                )
            else:
                appended = change.appended
                await asyncio.to_thread(
                    store.append_turn, session.session_id, appended, redact, marks
                )
            if session.title is None and change.turn is not None:
                title = _title(change.turn)
                # A key pasted into the first prompt stays out of session/list.
                title = None if title is None else redactor.redact(title)
                await asyncio.to_thread(
                    store.put_session_info, session.session_id, session.cwd, session.settings, title
                )
                session.title = title

        return commit

    async def clear(self, session_id: str) -> None:
        store = await self.store()
        await asyncio.to_thread(store.clear_session, session_id)

    async def delete(self, session_id: str) -> bool:
        """Forget a stored session and its workspace checkpoints; False when
        there was no such session."""
        store = await self.store()
        repository = store.checkpoint_repository(session_id)
        if repository is not None:
            await asyncio.to_thread(_remove_repository, repository)
        return await asyncio.to_thread(store.delete_session, session_id)

    async def page(
        self, cwd: str | None, cursor: str | None
    ) -> tuple[list[SessionInfo], str | None]:
        """One page of the stored sessions (in ``cwd`` when given), the most
        recently updated first, and the cursor of the next page (None after
        the last). A cursor names the last session of its page, so a session
        created or updated meanwhile moves to the front and shifts nothing."""
        store = await self.store()
        rows = await asyncio.to_thread(store.session_infos, None, cwd)
        rows.sort(key=lambda row: (-row["updated"], row["sessionId"]))
        if cursor is not None:
            after = _cursor_position(cursor)
            rows = [row for row in rows if (-row["updated"], row["sessionId"]) > after]
        page, rest = rows[:LIST_PAGE], rows[LIST_PAGE:]
        infos = [
            SessionInfo(
                session_id=row["sessionId"],
                cwd=row["cwd"],
                additional_directories=stored_directories(row["settings"]) or None,
                title=row["title"],
                updated_at=_timestamp(row["updated"]),
            )
            for row in page
        ]
        next_cursor = _cursor(page[-1]) if rest else None
        return infos, next_cursor

    async def close(self) -> None:
        if self._store is not None:
            await asyncio.to_thread(self._store.close)


def _remove_repository(path: str) -> None:
    """Remove a session's checkpoint repository (a real folder of the
    state directory's, never through a link)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)


def stored_cost(settings: dict[str, Any]) -> float:
    """The cost stored settings carry (0 when they carry none)."""
    cost = settings.get("cost")
    return float(cost) if isinstance(cost, int | float) else 0.0


def stored_directories(settings: dict[str, Any]) -> list[str]:
    """The additional directories stored settings carry (none when they
    carry no list of absolute paths)."""
    directories = settings.get(DIRECTORIES_SETTING)
    if not isinstance(directories, list):
        return []
    return [item for item in directories if isinstance(item, str) and item.startswith("/")]


def _title(turn: LLMMessage) -> str | None:
    text = " ".join(
        block["text"] for block in turn["content"] if block.get("type") == "text"
    ).split()
    joined = " ".join(text)
    if not joined:
        return None
    return joined if len(joined) <= TITLE_CHARS else joined[: TITLE_CHARS - 1] + "…"


def _timestamp(updated: float) -> str:
    return datetime.fromtimestamp(updated, UTC).isoformat()


def _cursor(row: dict[str, Any]) -> str:
    """An opaque cursor naming ``row``'s place in the listing."""
    place = json.dumps([-row["updated"], row["sessionId"]])
    return base64.urlsafe_b64encode(place.encode()).decode()


def _cursor_position(cursor: str) -> tuple[float, str]:
    try:
        key, session_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return float(key), str(session_id)
    except (ValueError, TypeError, binascii.Error):
        refuse(f"cursor {cursor!r} is not one that session/list gave")
