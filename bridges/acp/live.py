"""One running ACP agent process as the bridge holds it, and how a request to it fails.

Every way an answer can go wrong (an error, a lost connection, an answer the
schema refuses) becomes a :class:`Fault` naming the agent and the cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import acp
from acp.schema import AgentCapabilities
from pydantic import BaseModel, ValidationError

from oma_host.bridges.acp.client import BridgeClient
from oma_host.bridges.acp.config_options import SessionChoices
from oma_host.bridges.acp.login import describe
from oma_host.bridges.acp.transport import SHOWN_LINE, NdjsonPipe
from oma_host.bridges.common import StderrTail
from oma_host.core.errors import ErrorKind
from oma_host.core.events import McpFiltered, RunEvent
from oma_host.process.groups import GroupProcess, describe_exit, end_process_group, wait_for_exit

M = TypeVar("M", bound=BaseModel)

_EXIT_WAIT_S = 2.0  # after the connection drops, how long to wait for an exit code
_AUTH_REQUIRED = -32000


def agent_label(name: str, what: str) -> str:
    """An agent as messages name it: its config name, and what it said it is
    at ``initialize`` (else its command)."""
    return f"the ACP agent {name!r} ({what})"


def close_quietly(task: asyncio.Future[Any]) -> None:
    """Retrieve a finished background future's outcome, so that it is never
    reported as an exception nobody retrieved."""
    if task.done() and not task.cancelled():
        with contextlib.suppress(BaseException):
            task.result()


class Fault(Exception):
    """Ends the run as a failure; ``fatal`` faults also discard the process."""

    def __init__(self, kind: ErrorKind, message: str, *, fatal: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.fatal = fatal


@dataclass
class Live:
    """One agent process with its connection and session."""

    process: GroupProcess
    pipe: NdjsonPipe
    # acp.client.connection.ClientSideConnection: serves the agent's requests
    # and sends session/cancel; the bridge's requests go through ``pipe``.
    conn: Any
    client: BridgeClient
    stderr: StderrTail
    name: str  # the agent's config name
    command: str
    # The delegation room of the run that started the process: its
    # OMA_HOST_DELEGATION (oma_host.core.delegation) was made from it.
    room: int
    session_id: str = ""
    agent_info: str = ""  # name and version from its initialize answer
    auth_methods: list[str] = field(default_factory=list)
    prompted: bool = False  # the session has had its first prompt (and the systemPrompt)
    # mcp_filtered event data: servers session/new left out, reported in the first run
    mcp_left_out: list[McpFiltered] = field(default_factory=list)
    capabilities: AgentCapabilities | None = None  # from its initialize answer
    auth_offers: list[dict[str, Any]] = field(default_factory=list)  # authMethods, wire form
    choices: SessionChoices = field(default_factory=SessionChoices)  # its models and modes
    notices: list[RunEvent] = field(default_factory=list)  # events for the next run
    draining: asyncio.Future[None] | None = None  # an abandoned turn ending
    stuck: bool = False  # an abandoned turn never ended: the session is unusable
    closed: bool = False
    background: set[asyncio.Future[Any]] = field(default_factory=set)

    @property
    def who(self) -> str:
        """The agent as messages name it (see :func:`agent_label`)."""
        return agent_label(self.name, self.agent_info or self.command)

    @property
    def dead(self) -> bool:
        return (
            self.closed
            or self.stuck
            or self.pipe.eof
            or self.pipe.fault is not None
            or self.process.returncode is not None
        )

    def spawn(self, step: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(step)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        task.add_done_callback(close_quietly)

    async def shutdown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.client.end(cancelled=True)
        for task in [*self.background, *([self.draining] if self.draining else [])]:
            if task is not asyncio.current_task():  # the drain itself may be shutting down
                task.cancel()
        with contextlib.suppress(Exception):
            await self.conn.close()
        await end_process_group(self.process)
        self.stderr.cancel()


async def read_answer(live: Live, what: str, answer: Awaitable[Any], model: type[M]) -> M:
    """Await the answer to one request to the agent, read as ``model``,
    turning every way it can fail into a :class:`Fault` that names the
    cause."""
    try:
        return model.model_validate(await answer)
    except acp.RequestError as error:
        raise refused(live, what, error) from None
    except ConnectionError:
        raise await lost(live, what) from None
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise Fault(
            "protocol",
            f"{live.who} answered {what} with an invalid response ({where}: {problem['msg']})",
        ) from None


def refused(live: Live, what: str, error: acp.RequestError) -> Fault:
    detail = str(error)
    if error.data not in (None, {}, ""):
        detail += f" {json.dumps(error.data)[:SHOWN_LINE]}"
    if error.code == _AUTH_REQUIRED:
        return Fault(
            "auth",
            f"{live.who} refused {what}: authentication required: "
            f"{detail} (its login methods: {describe(live.auth_offers)}; name one in "
            "backend.auth, set its variables in backend.env, or log in with the "
            "agent's own tool)",
        )
    # An error answer to a prompt leaves the session usable; in the handshake it does not.
    return Fault(
        "acp",
        f"{live.who} answered {what} with error {error.code}: {detail}",
        fatal=what != "session/prompt",
    )


async def lost(live: Live, what: str) -> Fault:
    """Why the connection dropped: too much output, garbage on stdout, an
    exit, or our close."""
    if live.closed:
        return Fault("process", f"{live.who} was closed during {what}")
    if live.pipe.over_output_limit:  # what it wrote past the limit was not read
        return Fault(
            "output_limit",
            f"{live.who} wrote more than {live.pipe.output_limit} bytes on stdout during "
            f"{what} (backend.maxOutputBytes); it was ended",
        )
    if live.pipe.fault is not None:
        return Fault(
            "protocol",
            f"{live.who} broke the protocol during {what}: {live.pipe.fault}",
        )
    how = "closed its stdout"
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(_EXIT_WAIT_S):
            how = describe_exit(await wait_for_exit(live.process))
    await live.stderr.settle()
    tail = live.stderr.text()
    message = f"{live.who} {how} during {what}"
    return Fault("process", message + (f": {tail}" if tail else ""))


def send(live: Live, method: str, params: BaseModel) -> asyncio.Future[Any]:
    """Send a request whose params are a schema model, dumped as the library
    dumps them; its answer."""
    call = live.pipe.request(
        method,
        params.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True),
    )
    return call.answer
