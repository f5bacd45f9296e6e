"""Every message of a whole ACP session, the door's and the editor's, checked
against the stable v1 JSON schema of the official SDK package pinned in
``client/package.json``, each by its method and direction: a change of the
schema, or of what the door writes, fails here rather than in an editor.

The session runs through the real ``oma-host acp`` (a :class:`RawEditor`
reading every line it writes) against the provider simulator: initialize,
new, the pickers, a prompt whose model plans, reads, writes (asked, allowed,
written by the editor) and runs a command in the editor's terminal,
``/compact``, list, close, an error; then a second process: load (replay),
resume, fork, delete, logout."""

from __future__ import annotations

import asyncio
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, text
from tests.acp_server.raw_editor import TIMEOUT_S, RawEditor, raw_editor, stderr_of
from tests.builders import reply, tool_use
from tests.llm.compaction_helpers import summaries

SCHEMA_DIR = Path("node_modules") / "@agentclientprotocol" / "sdk" / "schema" / "v1"
# The methods the door serves that the stable v1 schema does not define yet:
# checked against the same package's unstable schema, by name, so no other
# method falls back to it unnoticed.
UNSTABLE_METHODS = frozenset({"session/fork"})
# Who sends a message: the door (the agent) or the editor (the client).
AGENT, CLIENT = "agent", "client"


class Schema:
    """One schema file of the SDK: its definitions by method, kind and side."""

    def __init__(self, path: Path) -> None:
        self.document: dict[str, Any] = json.loads(path.read_text())
        self.defs: dict[str, Any] = self.document["$defs"]
        self.by_method: dict[tuple[str, str, str], str] = {}
        for name, definition in self.defs.items():
            method, side = definition.get("x-method"), definition.get("x-side")
            kind = next(
                (k for k in ("Request", "Response", "Notification") if name.endswith(k)), ""
            )
            if method is not None and kind:
                # ``x-side``: the side that handles the method (a request and
                # its answer both carry the side that serves it).
                self.by_method[(method, kind, side)] = name

    def validator(self, name: str) -> Draft202012Validator:
        return _validator(self, name)

    def definition(self, method: str, kind: str, handler: str) -> str | None:
        return self.by_method.get((method, kind, handler)) or self.by_method.get(
            (method, kind, "protocol")
        )


@cache
def _validator(schema: Schema, name: str) -> Draft202012Validator:
    assert schema.document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    return Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema.defs})


class Checker:
    """Validates each message by its method and direction; what failed, in words."""

    def __init__(self, client_dir: Path) -> None:
        self.stable = Schema(client_dir / SCHEMA_DIR / "schema.json")
        self.unstable = Schema(client_dir / SCHEMA_DIR / "schema.unstable.json")
        # The method of each request in flight, by (its sender, its id).
        self.pending: dict[tuple[str, Any], str] = {}
        self.failures: list[str] = []
        self.checked: list[tuple[str, str, str]] = []  # (sender, method, definition)

    def check(self, sender: str, message: dict[str, Any]) -> None:
        other = CLIENT if sender == AGENT else AGENT
        if message.get("jsonrpc") != "2.0":
            self._fail(sender, "?", message, "no jsonrpc: 2.0")
            return
        if "method" in message:
            method = message["method"]
            kind = "Request" if "id" in message else "Notification"
            if "id" in message:
                self.pending[(sender, message["id"])] = method
            # The request's handler is the other side.
            self._validate(sender, method, kind, other, message.get("params"), message)
            return
        method = self.pending.pop((other, message.get("id")), "")
        if not method:
            self._fail(sender, "?", message, "an answer to no request in flight")
        elif "error" in message:
            self._against(sender, method, "Error", self.stable, message["error"], message)
        elif "result" in message:
            self._validate(sender, method, "Response", sender, message["result"], message)
        else:
            self._fail(sender, method, message, "an answer with neither result nor error")

    def _validate(
        self,
        sender: str,
        method: str,
        kind: str,
        handler: str,
        value: Any,
        message: dict[str, Any],
    ) -> None:
        schema = self.unstable if method in UNSTABLE_METHODS else self.stable
        name = schema.definition(method, kind, handler)
        if name is None:
            self._fail(sender, method, message, f"no {kind} of {method!r} in the schema")
            return
        self._against(sender, method, name, schema, value, message)

    def _against(
        self,
        sender: str,
        method: str,
        name: str,
        schema: Schema,
        value: Any,
        message: dict[str, Any],
    ) -> None:
        self.checked.append((sender, method, name))
        error = best_match(schema.validator(name).iter_errors(value))
        if error is not None:
            where = "/".join(str(part) for part in error.absolute_path)
            self._fail(sender, method, message, f"{name} at /{where}: {error.message}")

    def _fail(self, sender: str, method: str, message: dict[str, Any], why: str) -> None:
        self.failures.append(f"{sender} {method}: {why}\n  {json.dumps(message)[:2000]}")


class RecordingEditor(RawEditor):
    """A :class:`RawEditor` whose every line, read or written, is checked;
    it serves the door's requests as an editor with fs and a terminal
    would: permissions allowed once, files read from the disk and written
    to its buffers, a terminal whose command exited 0 with a line of output."""

    def __init__(self, editor: RawEditor, checker: Checker) -> None:
        super().__init__(editor.process)
        self.checker = checker
        self.buffers: dict[str, str] = {}
        self.on_request = self.serve

    def send_line(self, line: bytes) -> None:
        self.checker.check(CLIENT, json.loads(line))
        super().send_line(line)

    async def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        # Check before answering, so the answer follows its request.
        line = await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT_S)
        assert line, "oma-host acp closed its output"
        message: dict[str, Any] = json.loads(line)
        self.checker.check(AGENT, message)
        self.received.append(message)
        if "method" in message and "id" in message:
            reply = {"jsonrpc": "2.0", "id": message["id"], **self.on_request(message)}
            self.send_line(json.dumps(reply).encode() + b"\n")
        return message

    def serve(self, request: dict[str, Any]) -> dict[str, Any]:
        method, params = request["method"], request["params"]
        if method == "session/request_permission":
            allow = next(o for o in params["options"] if o["kind"] == "allow_once")
            return {"result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}}
        if method == "fs/read_text_file":
            path = params["path"]
            return {"result": {"content": self.buffers.get(path) or Path(path).read_text()}}
        if method == "fs/write_text_file":
            self.buffers[params["path"]] = params["content"]
            return {"result": {}}
        if method == "terminal/create":
            return {"result": {"terminalId": "term-1"}}
        if method == "terminal/wait_for_exit":
            return {"result": {"exitCode": 0, "signal": None}}
        if method == "terminal/output":
            exited = {"exitCode": 0, "signal": None}
            return {"result": {"output": "built\n", "truncated": False, "exitStatus": exited}}
        return {"result": {}}  # terminal/release, terminal/kill

    async def drain(self) -> None:
        """Close the door's input and check every line it writes until it ends."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        while line := await asyncio.wait_for(self.process.stdout.readline(), TIMEOUT_S):
            message = json.loads(line)
            self.checker.check(AGENT, message)
            self.received.append(message)


CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "auth": {"terminal": True},
    "session": {"compaction": {}, "notices": {}},
}


def _ok(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


async def _first_process(door: Door, checker: Checker) -> str:
    """Initialize, open, pick, prompt with tools, compact, list, close; the session's id."""
    async with raw_editor(door) as raw:
        editor = RecordingEditor(raw, checker)
        init = _ok(
            await editor.call(
                "initialize",
                {
                    "protocolVersion": 1,
                    "clientCapabilities": CAPABILITIES,
                    "clientInfo": {"name": "schema-check", "version": "1.0.0"},
                },
            )
        )
        known = set(checker.stable.defs["AgentCapabilities"]["properties"])
        unknown = set(init["agentCapabilities"]) - known
        assert not unknown, f"agentCapabilities the v1 schema does not know: {sorted(unknown)}"
        sessions = checker.unstable.defs["SessionCapabilities"]["properties"]
        unknown = set(init["agentCapabilities"]["sessionCapabilities"]) - set(sessions)
        assert not unknown, f"sessionCapabilities the schema does not know: {sorted(unknown)}"
        assert any(method["type"] == "terminal" for method in init["authMethods"])

        cwd = str(door.cwd)
        new = _ok(await editor.call("session/new", {"cwd": cwd, "mcpServers": []}))
        session = new["sessionId"]
        current = new["modes"]["currentModeId"]
        other = next(m["id"] for m in new["modes"]["availableModes"] if m["id"] != current)
        for mode in (other, current):
            _ok(await editor.call("session/set_mode", {"sessionId": session, "modeId": mode}))
        option = next(o for o in new["configOptions"] if o["type"] == "select")
        _ok(
            await editor.call(
                "session/set_config_option",
                {"sessionId": session, "configId": option["id"], "value": option["currentValue"]},
            )
        )

        plan = [{"content": "Build it", "priority": "high", "status": "in_progress"}]
        door.sim.script(
            reply(
                tool_use("p", "update_plan", entries=plan),
                tool_use("r", "file_read", path="notes.txt"),
                tool_use("w", "file_write", path="notes.txt", content="new notes\n"),
                tool_use("sh", "shell", command="make"),
            ),
            Reply.text("done"),
            Reply.text("second answer " * 40),
        )
        turn = _ok(
            await editor.call("session/prompt", {"sessionId": session, "prompt": [text("go")]})
        )
        assert turn["stopReason"] == "end_turn"
        asked = [m["method"] for m in editor.received if "method" in m and "id" in m]
        assert {"session/request_permission", "fs/read_text_file", "fs/write_text_file"} <= set(
            asked
        ), asked
        assert "terminal/create" in asked and "terminal/release" in asked, asked
        assert editor.buffers == {f"{os.path.realpath(door.cwd)}/notes.txt": "new notes\n"}
        updates = {u["sessionUpdate"] for u in editor.updates_of(session)}
        assert {"plan", "tool_call", "tool_call_update", "agent_message_chunk"} <= updates
        assert {"current_mode_update", "config_option_update"} <= updates

        prompt = {"sessionId": session, "prompt": [text("more " * 40)]}
        _ok(await editor.call("session/prompt", prompt))
        compact = {"sessionId": session, "prompt": [text("/compact")]}
        assert _ok(await editor.call("session/prompt", compact))["stopReason"] == "end_turn"
        compactions = [
            u["status"]
            for u in editor.updates_of(session)
            if u["sessionUpdate"] == "compaction_update"
        ]
        assert compactions == ["in_progress", "completed"]

        listed = _ok(await editor.call("session/list", {"cwd": cwd}))
        assert [info["sessionId"] for info in listed["sessions"]] == [session]
        assert _ok(await editor.call("session/close", {"sessionId": session})) == {}
        refused = await editor.call("session/prompt", prompt)
        assert refused["error"]["code"] == -32602
        await editor.drain()
        return str(session)


async def _second_process(door: Door, checker: Checker, session: str) -> None:
    """Load (replayed), resume, fork, delete the fork, log out."""
    cwd = str(door.cwd)
    opened = {"sessionId": session, "cwd": cwd, "mcpServers": []}
    async with raw_editor(door) as raw:
        editor = RecordingEditor(raw, checker)
        _ok(await editor.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        _ok(await editor.call("session/load", opened))
        replayed = {u["sessionUpdate"] for u in editor.updates_of(session)}
        assert {"user_message_chunk", "agent_message_chunk"} <= replayed, replayed
        _ok(await editor.call("session/resume", opened))
        fork = _ok(await editor.call("session/fork", opened))["sessionId"]
        assert _ok(await editor.call("session/delete", {"sessionId": fork})) == {}
        assert _ok(await editor.call("logout", {})) == {}
        await editor.drain()
        await stderr_of(editor)


@pytest.mark.asyncio
async def test_a_whole_sessions_traffic_validates_against_the_v1_schema(door: Door) -> None:
    # logout forgets stored keys: this test's own config folder, no OS keyring.
    door.env["XDG_CONFIG_HOME"] = str(door.tmp / "config")
    door.env["PYTHON_KEYRING_BACKEND"] = "keyring.backends.null.Keyring"
    (door.cwd / "notes.txt").write_text("old notes\n")
    tools = ["file_read", "file_write", "shell", "update_plan"]
    door.write_agents(first=door.llm(tools=tools, environment=False))
    summaries(door.sim)
    checker = Checker(door.client_dir)

    session = await _first_process(door, checker)
    await _second_process(door, checker, session)

    assert not checker.failures, "\n".join(checker.failures)
    seen = {(sender, name) for sender, _, name in checker.checked}
    for sender, name in [
        (AGENT, "InitializeResponse"),
        (AGENT, "NewSessionResponse"),
        (AGENT, "SetSessionModeResponse"),
        (AGENT, "SetSessionConfigOptionResponse"),
        (AGENT, "SessionNotification"),
        (AGENT, "RequestPermissionRequest"),
        (AGENT, "ReadTextFileRequest"),
        (AGENT, "WriteTextFileRequest"),
        (AGENT, "CreateTerminalRequest"),
        (AGENT, "WaitForTerminalExitRequest"),
        (AGENT, "TerminalOutputRequest"),
        (AGENT, "ReleaseTerminalRequest"),
        (AGENT, "PromptResponse"),
        (AGENT, "ListSessionsResponse"),
        (AGENT, "CloseSessionResponse"),
        (AGENT, "Error"),
        (AGENT, "LoadSessionResponse"),
        (AGENT, "ResumeSessionResponse"),
        (AGENT, "ForkSessionResponse"),
        (AGENT, "DeleteSessionResponse"),
        (AGENT, "LogoutResponse"),
        (CLIENT, "InitializeRequest"),
        (CLIENT, "PromptRequest"),
        (CLIENT, "RequestPermissionResponse"),
        (CLIENT, "WriteTextFileResponse"),
        (CLIENT, "CreateTerminalResponse"),
    ]:
        assert (sender, name) in seen, (sender, name)


def test_the_checker_fails_a_message_the_schema_refuses(client_dir: Path) -> None:
    """The check can fail: a plan entry without its priority, an unknown
    update, an answer whose result misses a required field."""
    checker = Checker(client_dir)
    checker.check(
        AGENT,
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "s",
                "update": {
                    "sessionUpdate": "plan",
                    "entries": [{"content": "x", "status": "pending"}],
                },
            },
        },
    )
    checker.check(
        CLIENT, {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}}
    )
    checker.check(AGENT, {"jsonrpc": "2.0", "id": 1, "result": {}})
    checker.check(AGENT, {"jsonrpc": "2.0", "method": "session/nonsense", "params": {}})
    assert len(checker.failures) == 4, checker.failures
    assert "SessionNotification" in checker.failures[0]
    assert "NewSessionRequest" in checker.failures[1] and "mcpServers" in checker.failures[1]
    assert "NewSessionResponse" in checker.failures[2] and "sessionId" in checker.failures[2]
    assert "no Notification of 'session/nonsense'" in checker.failures[3]
