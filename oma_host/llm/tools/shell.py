"""``shell {command, timeoutMs?}``: a command line run by ``/bin/sh -c`` in ``cwd``.

The host passes an argv list and builds no shell string. The command runs in
the editor's terminal when the editor has one, else under the host's runner,
which ends everything it started; either way it ends on timeout and
cancellation. Its effect is ``execute``: the policy asks by default and reads
the line one simple command at a time. Where the agent's sandbox applies
(:mod:`oma_host.workspace.sandbox`) the command runs confined under the host's
runner, never in the editor's terminal; ``unsandboxed: true`` (always asked
about) runs it as without one. docs/tools.md, "Shell".
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from oma_host.core.config import SandboxMode
from oma_host.core.tools import SHELL as SHELL_FACTS
from oma_host.core.validation import predicate_error
from oma_host.llm.tools.base import NonEmpty, ToolParams, Workspace, declare
from oma_host.workspace.confined import Stop, ToolError
from oma_host.workspace.sandbox import (
    SANDBOX_SIGNS,
    remove_tmp,
    sandbox_note,
    sandboxed_argv,
    unavailable,
)
from oma_host.workspace.shell.env import blanked_variables, shell_environment
from oma_host.workspace.shell.keeper import KILL_GRACE_S
from oma_host.workspace.shell.runner import ENDS, Ending, HeadTail, run_command
from oma_host.workspace.shell.terminal import run_in_terminal

SHELL = "/bin/sh"
# What the model reads of the output: the first OUTPUT_HEAD characters and
# the last OUTPUT_TAIL (a failure's cause is more often at the end).
OUTPUT_HEAD = 10_000
OUTPUT_TAIL = 20_000
OUTPUT_CAP = OUTPUT_HEAD + OUTPUT_TAIL
# What the editor's terminal keeps of the output for terminal/output.
TERMINAL_OUTPUT_BYTES = 4 * OUTPUT_CAP


class ShellParams(ToolParams):
    command: NonEmpty = Field(
        description="the command line, run by /bin/sh -c in the working directory"
    )
    timeout_ms: float = Field(
        0,
        ge=0,
        alias="timeoutMs",
        description="milliseconds it may run before it is ended; absent or 0: the most "
        "allowed (120000 unless the agent sets toolTimeoutMs), and never more than that",
    )
    unsandboxed: bool = Field(
        False,
        description="run outside the sandbox; only to retry a command that the sandbox made "
        "fail (a write outside the workspace, the network). The user is always asked first",
    )
    reason: str = Field(
        "", description="with unsandboxed: why the command must run outside the sandbox"
    )
    # Not an input (left out of the schema): a call that sends it is refused
    # by name, since its unit is a guess (seconds here once, milliseconds in
    # other agents' shells), and ignored it would give the command the most.
    timeout: SkipJsonSchema[Any] = None

    @field_validator("timeout_ms", mode="before")
    @classmethod
    def _most_allowed(cls, value: Any) -> Any:
        return 0 if value is None else value

    @model_validator(mode="after")
    def _reason_given(self) -> ShellParams:
        if self.unsandboxed and not self.reason.strip():
            raise predicate_error("unsandboxed: true needs a reason saying why")
        return self

    @field_validator("timeout")
    @classmethod
    def _renamed(cls, value: Any) -> Any:
        raise predicate_error(
            "is not an input of this tool: give the time limit as timeoutMs, in milliseconds"
        )


def _limit(params: ShellParams, workspace: Workspace) -> float:
    most = workspace.call_timeout_s
    return min(params.timeout_ms / 1000, most) if params.timeout_ms > 0 else most


def _outcome(ending: Ending) -> str:
    """The line after the output that says how the command ended."""
    if ending.exit_code == 0:
        said = "[exit code 0]"
    elif ending.exit_code is not None:
        said = f"[exit code {ending.exit_code}: the command failed]"
    elif ending.signal is not None:
        said = f"[ended by {ending.signal}]"
    else:
        said = "[exit status unknown]"
    if ending.leftovers_ended:
        said += "\n[processes it left running in the background were ended]"
    return said


async def _run(params: ShellParams, workspace: Workspace, stop: Stop) -> str:
    sandbox: SandboxMode = "off" if params.unsandboxed else workspace.sandbox
    why_not = await asyncio.to_thread(unavailable, sandbox, workspace.roots)
    if sandbox != "off" and why_not is None:
        tmp = tempfile.mkdtemp(prefix="oma-sandbox-")  # the command's own, removed after
        try:
            argv = await asyncio.to_thread(
                sandboxed_argv,
                [SHELL, "-c", params.command],
                sandbox,
                cwd=workspace.root,
                roots=workspace.roots,
                tmp=tmp,
            )
            said, ending = await _run_argv(argv, params, workspace, local=True, TMPDIR=tmp)
        finally:
            await asyncio.shield(asyncio.to_thread(remove_tmp, tmp))
        if ending.exit_code != 0 and any(sign in said for sign in SANDBOX_SIGNS):
            said += (
                f"\n[the command ran in {sandbox_note(sandbox)}; if that is why it failed, "
                "call shell again with the same command, unsandboxed: true and a reason: "
                "the user is asked to approve that exact command]"
            )
        return said
    said, _ = await _run_argv([SHELL, "-c", params.command], params, workspace, local=False)
    if why_not is not None:
        said += f"\n[the sandbox ({sandbox}) is not available here, so none confined it: {why_not}]"
    return said


async def _run_argv(
    argv: list[str], params: ShellParams, workspace: Workspace, *, local: bool, **extra: str
) -> tuple[str, Ending]:
    """Run ``argv``: in the editor's terminal when there is one and not
    ``local``, else under the host's runner with ``extra`` variables. The
    result's text, and how the command ended."""
    limit = _limit(params, workspace)
    kept = HeadTail(OUTPUT_HEAD, OUTPUT_TAIL)
    report, call_id = workspace.report, workspace.call_id
    terminal = None if local else workspace.editor.terminal
    if terminal is not None:

        def shown(terminal_id: str) -> None:
            if report is not None and call_id is not None:
                report(
                    {
                        "type": "tool_output",
                        "data": {"toolUseId": call_id, "terminalId": terminal_id},
                    }
                )

        ending = await run_in_terminal(
            terminal,
            argv,
            cwd=workspace.root,
            # The editor's environment, less what the host's own shell withholds,
            # with the run's delegation limits (as a host-run command has them).
            env={
                **dict.fromkeys(blanked_variables(os.environ, workspace.secrets), ""),
                **workspace.command_env,
            },
            timeout_s=limit,
            request_timeout_s=workspace.editor_timeout_s,
            output_byte_limit=TERMINAL_OUTPUT_BYTES,
            kept=kept,
            shown=shown,
        )
        where = "the command was killed in the editor's terminal"
    else:

        def streamed(text: str) -> None:
            if report is not None and call_id is not None:
                report({"type": "tool_output", "data": {"toolUseId": call_id, "text": text}})

        environment = shell_environment(
            os.environ, workspace.secrets, PWD=workspace.root, **workspace.command_env, **extra
        )
        ending = await run_command(
            argv,
            cwd=workspace.root,
            env=environment,
            timeout_s=limit,
            kept=kept,
            on_output=streamed,
        )
        where = (
            f"the command and {ENDS} were ended (SIGTERM, then SIGKILL after {KILL_GRACE_S:g} s)"
        )
    output = kept.text() or "(no output)"
    if ending.timed_out:
        raise ToolError(f"timed out after {limit:g} s: {where}. Its output until then:\n{output}")
    return f"{output.rstrip(chr(10))}\n{_outcome(ending)}", ending


TOOL = declare(SHELL_FACTS, ShellParams, _run)
