"""The ACP door's serving loop once ``initialize`` is answered: the door
(and the ACP library under it) is imported in a thread while the editor
reads that answer, and the requests that came meanwhile wait for it."""

from __future__ import annotations

import asyncio
import functools
import importlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from oma_host.acp_server.agents import ServedAgents
from oma_host.acp_server.auth import initialize_answer
from oma_host.acp_server.handshake import SERVED_REQUESTS, FirstRequest, plain_initialize
from oma_host.process.termination import Termination
from oma_host.wire.stdio import protect_stdout, stdin_reader, stream_writer

if TYPE_CHECKING:
    from oma_host.acp_server.door import OmaAcpAgent
    from oma_host.acp_server.editor import EditorClient
    from oma_host.acp_server.routes import DoorRoutes
    from oma_host.acp_server.wire import (
        AcpWire,
        Canceller,
        NotificationHandler,
        RequestHandler,
    )


def serve_door(
    agents: ServedAgents,
    first: FirstRequest,
    max_message_bytes: int,
    opened: Callable[[EditorClient], OmaAcpAgent],
) -> int:
    """Serve the rest of stdin (what ``first`` read and did not answer, then
    the editor's next requests) until the editor closes it (0), or until
    SIGTERM or SIGHUP (128 plus its number). ``opened`` makes the door for
    the editor once its modules are loaded."""
    return asyncio.run(_serve(agents, first, max_message_bytes, opened))


async def _serve(
    agents: ServedAgents,
    first: FirstRequest,
    max_message_bytes: int,
    opened: Callable[[EditorClient], OmaAcpAgent],
) -> int:
    task = asyncio.current_task()
    assert task is not None
    termination = Termination(task)
    try:
        await _serve_editor(agents, first, max_message_bytes, opened)
    except asyncio.CancelledError:
        if termination.signum is None:
            raise  # Ctrl-C: asyncio.run makes it a KeyboardInterrupt (exit 130)
    finally:
        termination.remove()
    return 0 if termination.signum is None else termination.exit_code


async def _serve_editor(
    agents: ServedAgents,
    first: FirstRequest,
    max_message_bytes: int,
    opened: Callable[[EditorClient], OmaAcpAgent],
) -> None:
    from oma_host.acp_server.wire import READ_CHUNK, AcpWire

    # Pipes from an editor, or files and /dev/null from a script.
    writer = await stream_writer(protect_stdout())
    reader = await stdin_reader(READ_CHUNK, first.pending)
    wire = AcpWire(reader, writer, max_message_bytes)
    door = LazyDoor(agents, opened, wire)
    if first.capabilities is not None:
        door.answered_first(first.capabilities)
    try:
        await wire.serve(door.requests(), door.notifications(), door.cancellers())
    finally:
        await door.close()
        from oma_host.telemetry import close_if_used

        await close_if_used()


def _import_door() -> None:
    """The door's modules, the ACP library first (see :mod:`oma_host.wire.acp_library`)."""
    from oma_host.wire import acp_library  # noqa: F401 (loads the library)

    importlib.import_module("oma_host.acp_server.routes")


class LazyDoor:
    """The door's method table, answering ``initialize`` before the rest of
    the door (and the ACP library under it) is imported: a plain
    ``initialize`` is answered by :mod:`.handshake`, and then the door is
    imported in a thread while the editor reads the answer. Any other
    request waits for it, and is then served by :mod:`.routes` as always."""

    def __init__(
        self,
        agents: ServedAgents,
        opened: Callable[[EditorClient], OmaAcpAgent],
        wire: AcpWire,
    ) -> None:
        self._agents = agents
        self._opened = opened
        self._wire = wire
        self._capabilities: dict[str, Any] | None = None  # a plain initialize's
        self._loading: asyncio.Task[tuple[OmaAcpAgent, DoorRoutes]] | None = None

    def _load(self) -> asyncio.Task[tuple[OmaAcpAgent, DoorRoutes]]:
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._loaded())
        return self._loading

    async def _loaded(self) -> tuple[OmaAcpAgent, DoorRoutes]:
        await asyncio.to_thread(_import_door)
        from oma_host.acp_server.editor import EditorClient
        from oma_host.acp_server.routes import door_routes

        agent = self._opened(EditorClient(self._wire))
        if self._capabilities is not None:
            agent.accept_capabilities(self._capabilities)
        return agent, door_routes(agent)

    def answered_first(self, capabilities: dict[str, Any]) -> None:
        """``initialize`` was answered before the serving began
        (:func:`.handshake.answer_first_request`): keep the client's
        capabilities and load the door now."""
        self._capabilities = capabilities
        self._load()

    async def _initialize(self, params: Any) -> Any:
        capabilities = plain_initialize(params)
        if capabilities is None or self._loading is not None:
            return await self._routed("initialize", params)
        self._capabilities = capabilities
        answer = initialize_answer(self._agents.auth_methods, capabilities)
        # Written before the import begins: the task starts once this returns.
        self._load()
        return answer

    async def _routed(self, method: str, params: Any) -> Any:
        # Shielded: a cancelled request must not cancel the loading the rest wait on.
        _, (requests, _) = await asyncio.shield(self._load())
        return await requests[method](params)

    def requests(self) -> Mapping[str, RequestHandler]:
        """The served methods: ``initialize`` answered at once, the rest by
        the routes once the door is loaded."""
        return _ServedMethods(self._initialize, self._routed)

    def notifications(self) -> Mapping[str, NotificationHandler]:
        async def cancel(params: Any) -> None:
            _, (_, notifications) = await asyncio.shield(self._load())
            await notifications["session/cancel"](params)

        return {"session/cancel": cancel}

    def cancellers(self) -> Mapping[str, Canceller]:
        """How ``$/cancel_request`` ends a request gracefully: a prompt ends
        as ``session/cancel`` ends it (``stopReason: "cancelled"``)."""

        async def prompt(params: Any) -> None:
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            await self.notifications()["session/cancel"]({"sessionId": session_id})

        return {"session/prompt": prompt}

    async def close(self) -> None:
        if self._loading is None or self._loading.cancelled():
            return
        try:
            agent, _ = await self._loading
        except Exception:  # the import failed: the requests that waited said so
            return
        await agent.close()


class _ServedMethods(Mapping[str, "RequestHandler"]):
    """The door's method table before the door is loaded: ``initialize`` its
    own handler, each other served method one that routes it once it is."""

    def __init__(
        self,
        initialize: RequestHandler,
        routed: Callable[[str, Any], Awaitable[Any]],
    ) -> None:
        self._initialize = initialize
        self._routed = routed

    def __getitem__(self, method: str) -> RequestHandler:
        if method == "initialize":
            return self._initialize
        if method not in SERVED_REQUESTS:
            raise KeyError(method)  # answered -32601 by the wire, the door not loaded for it
        return functools.partial(self._routed, method)

    def __iter__(self) -> Iterator[str]:
        return iter(SERVED_REQUESTS)

    def __len__(self) -> int:
        return len(SERVED_REQUESTS)
