"""A ``shell`` command run in the editor's terminal (ACP ``terminal/*``), when it offers one.

The command runs as ``/bin/sh -c`` with the variables the host's shell
withholds passed empty, the user watches it live in the tool call, and the
terminal is always released, also when the call is cancelled. An editor that
fails a request is an error result to the model.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from oma_host.core.editor_channel import EditorTerminal, TerminalExit
from oma_host.workspace.confined import ToolError
from oma_host.workspace.shell.runner import Ending, HeadTail

T = TypeVar("T")


async def _asked(request: Awaitable[T], what: str, timeout_s: float) -> T:
    """The editor's answer to one request; ToolError when it fails or is late."""
    try:
        return await asyncio.wait_for(request, timeout_s)
    except TimeoutError:
        raise ToolError(f"the editor did not answer {what} within {timeout_s:g} s") from None
    except Exception as error:  # the editor answered an error
        raise ToolError(f"the editor failed {what}: {error}") from None


async def _quietly(request: Awaitable[None], timeout_s: float) -> None:
    """A request whose failure changes nothing (ending a terminal)."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(request, timeout_s)


async def _created(terminal: EditorTerminal, request: Awaitable[str], timeout_s: float) -> str:
    """The new terminal's id. A call cancelled while the editor opens it
    waits for the id all the same, to kill and release what the editor
    started, before the cancellation goes on."""
    creating = asyncio.ensure_future(request)
    try:
        return await _asked(asyncio.shield(creating), "terminal/create", timeout_s)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            terminal_id = await asyncio.wait_for(creating, timeout_s)
            await _quietly(terminal.kill(terminal_id), timeout_s)
            await _quietly(terminal.release(terminal_id), timeout_s)
        raise
    finally:
        creating.cancel()  # given up on (late or failed): nothing waits for it


async def run_in_terminal(
    terminal: EditorTerminal,
    argv: list[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    request_timeout_s: float,
    output_byte_limit: int,
    kept: HeadTail,
    shown: Callable[[str], None],
) -> Ending:
    """Run ``argv`` in a new terminal of the editor, as the module docstring
    says, with ``env`` over the editor's environment (the withheld variables
    empty, the run's delegation limits): its output goes to ``kept``, its
    terminal id to ``shown``."""
    terminal_id = await _created(
        terminal,
        terminal.create(argv[0], argv[1:], cwd, dict(env), output_byte_limit),
        request_timeout_s,
    )
    try:
        shown(terminal_id)
        timed_out = False
        try:
            ended: TerminalExit | None = await asyncio.wait_for(
                terminal.wait_for_exit(terminal_id), timeout_s
            )
        except TimeoutError:
            timed_out, ended = True, None
            await _quietly(terminal.kill(terminal_id), request_timeout_s)
        except Exception as error:  # the editor answered an error
            await _quietly(terminal.kill(terminal_id), request_timeout_s)
            raise ToolError(f"the editor failed terminal/wait_for_exit: {error}") from None
        output = await _asked(terminal.output(terminal_id), "terminal/output", request_timeout_s)
    except asyncio.CancelledError:
        await _quietly(terminal.kill(terminal_id), request_timeout_s)
        raise
    finally:
        await _quietly(terminal.release(terminal_id), request_timeout_s)
    if output.truncated:
        kept.add(
            f"[... earlier output not kept by the editor ({output_byte_limit} bytes kept) ...]\n"
        )
    kept.add(output.text)
    ended = ended or output.exit or TerminalExit(None, None)
    return Ending(ended.exit_code, ended.signal, timed_out)
