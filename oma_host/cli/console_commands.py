"""The commands of ``oma-host console`` and its connection to the host.

:class:`Console` turns a command line into requests and writes what comes back,
one readable line at a time, to an :class:`Output`; the terminal belongs to
:mod:`oma_host.cli.console`. Every :class:`Console` method runs on the
console's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import time
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol

from oma_host.cli.client import HostClient, RpcError
from oma_host.core.errors import ErrorCode
from oma_host.wire.peer import valid_id

_IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
HELP = """\
  create NAME {config}        create an agent from a JSON AgentConfig ("name" defaults to NAME)
  run NAME TEXT               one fresh run; TEXT may be a JSON array of messages
  stream NAME TEXT            the same, with the reply streamed as it arrives
  prompt NAME TEXT            a conversation turn, kept in the agent's history
  image NAME FILE QUESTION    a prompt holding QUESTION and the image (png, jpg, gif, webp)
  history NAME                the agent's conversation so far
  reset NAME                  clear the agent's history
  cancel                      cancel every run in flight (Ctrl-C does the same)
  agents                      the host's agents
  {"jsonrpc": "2.0", ...}     a raw JSON-RPC line, sent as is; the answer is printed
  help                        this text
  quit                        shut the host down and leave (Ctrl-D does the same)
NAME is the name given to create (or an agentId)."""
COMMANDS = [
    line.split()[0] for line in HELP.splitlines() if line[:2] == "  " and line[2:3].isalpha()
]


class Output(Protocol):
    """Where the console writes (thread-safe, and kept above the prompt)."""

    def line(self, text: str) -> None: ...

    def stream(self, text: str) -> None: ...

    def status(self, key: str, text: str | None) -> None: ...


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe_error(error: RpcError) -> str:
    """One readable line: code, error type, the JSON path when there is one, message."""
    data = error.data if isinstance(error.data, dict) else {}
    kind, path, message = data.get("type"), data.get("path"), error.message
    if isinstance(path, str) and path and message.startswith(path):
        message = message[len(path) :].lstrip(" :")
    head = f"error {error.code}" + (f" {kind}" if kind else "") + (f" at {path}" if path else "")
    return _one_line(f"{head}: {message}")


def _split_word(text: str) -> tuple[str, str]:
    """The first word of ``text`` (quotes allowed, for paths with spaces) and the rest."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end > 0:
            return text[1:end], text[end + 1 :].strip()
    word, _, rest = text.partition(" ")
    return word, rest.strip()


def _run_input(text: str) -> Any:
    """Text, or the structured input it spells when it is a JSON array."""
    if text.startswith("["):
        with contextlib.suppress(ValueError):
            value = json.loads(text)
            if isinstance(value, list):
                return value
    return text


_MESSAGES_EXAMPLE = '[{"role":"user","content":[{"type":"text","text":"hi"}]}]'
_BLOCKS_EXAMPLE = '[{"type":"text","text":"hi"}]'


def _shape_hint(command: str, run_input: Any) -> str | None:
    """What shape ``command`` takes, when ``run_input`` has the other one:
    messages given to ``prompt``, or bare content blocks to ``run``/``stream``."""
    if not isinstance(run_input, list) or not run_input or not isinstance(run_input[0], dict):
        return None
    first = run_input[0]
    if command == "prompt" and "role" in first:
        return (
            f"prompt takes TEXT or content blocks ({_BLOCKS_EXAMPLE}), one user turn; "
            "a list of messages goes to run or stream"
        )
    if command != "prompt" and "role" not in first and "type" in first:
        return (
            f"{command} takes TEXT or a list of messages ({_MESSAGES_EXAMPLE}); "
            "content blocks alone go to prompt"
        )
    return None


def _describe_block(block: Any) -> str:
    if not isinstance(block, dict) or block.get("type") not in ("text", "image"):
        return _one_line(json.dumps(block), 120)
    if block["type"] == "text":
        return str(block.get("text", ""))
    source = block.get("source") or {}
    return (
        f"[image {source.get('media_type', '?')}, {len(str(source.get('data', '')))} base64 chars]"
    )


def _gets_no_answer(message: Any) -> bool:
    """A notification, or a response to a host request: the host answers neither."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return False
    if "id" not in message:
        return isinstance(message.get("method"), str)
    return valid_id(message["id"]) and message.get("method") is None


class ConsoleClient(HostClient):
    """A HostClient whose host runs in its own session, so the Ctrl-C a person
    types reaches the console (which turns it into ``$/cancelRequest``), not the host."""

    @classmethod
    async def spawn_detached(cls, argv: Sequence[str]) -> ConsoleClient:
        client = await cls.spawn(argv, start_new_session=True)
        # Raw lines typed by a person usually carry small ids; keep ours apart.
        client._ids = itertools.count(1001)
        return client

    @property
    def host_process(self) -> asyncio.subprocess.Process:
        assert self.process is not None  # always spawned, never connected
        return self.process

    def expect_reply(self, key: Any) -> asyncio.Future[Any]:
        """A future for the answer to a raw line whose id is ``key`` (None: id null)."""
        if key in self._pending:
            raise ValueError(f"id {json.dumps(key)} belongs to a request still in flight")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[key] = future
        return future


class Console:
    """The commands; every method runs on the console's event loop."""

    def __init__(self, screen: Output) -> None:
        self.screen = screen
        self.client: ConsoleClient | None = None
        self.agents: dict[str, str] = {}  # console name -> agentId
        self.runs: dict[Any, str] = {}  # request id -> what it is, while in flight
        self._streams: dict[str, str] = {}  # partialResultToken -> agent name
        self._reporting: dict[str, str] = {}  # workDoneToken -> agent name
        self._tasks: set[asyncio.Future[Any]] = set()
        self._tokens = itertools.count(1)
        self.closing = False
        self.host_gone = False

    async def start(self, argv: Sequence[str]) -> str:
        client = await ConsoleClient.spawn_detached(argv)
        self.client = client
        client.on_notification = self._notification
        client.handlers["agent/beforeRun"] = self._hook("beforeRun")
        client.handlers["agent/afterRun"] = self._hook("afterRun")
        self._spawn_task(self._relay_stderr())
        self._spawn_task(self._watch_exit())
        info = await client.initialize()
        server = info.get("serverInfo", {})
        return f"{server.get('name', 'host')} {server.get('version', '')}".strip()

    def _spawn_task(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _hook(self, which: str) -> Any:
        def answer(params: Any) -> None:
            name = params.get("agentName") if isinstance(params, dict) else None
            self.screen.line(f"[{which} hook for {name}: answered null, no change]")

        return answer

    async def _relay_stderr(self) -> None:
        assert self.client is not None and self.client.host_process.stderr is not None
        while line := await self.client.host_process.stderr.readline():
            self.screen.line("host: " + line.decode(errors="replace").rstrip())

    async def _watch_exit(self) -> None:
        assert self.client is not None
        code = await self.client.host_process.wait()
        self.host_gone = True
        if not self.closing:
            self.screen.line(f"the host exited unexpectedly (code {code}); type quit")

    def _notification(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if message.get("method") == "$/progress" and isinstance(params, dict):
            value = params.get("value")
            token = params.get("token")
            if token in self._reporting and isinstance(value, dict):
                if value.get("kind") == "report":
                    self.screen.status(token, f"{self._reporting[token]}: {value.get('message')}")
                return
            if token in self._streams and isinstance(value, dict):
                kind, data = value.get("type"), value.get("data")
                if kind in ("text", "reasoning") and isinstance(data, str):
                    self.screen.stream(data)
                elif kind != "error":  # a failed stream is reported by its result
                    self.screen.line(f"[{kind}] {_one_line(json.dumps(data), 200)}")
                return
        self.screen.line("← " + _one_line(json.dumps(message), 300))

    # -- commands -------------------------------------------------------------

    async def execute(self, line: str, *, background: bool) -> None:
        """Run one command line; a run started in ``background`` reports when it ends."""
        if self.host_gone:
            self.screen.line("error: the host has exited; type quit")
            return
        if line.startswith("{") or line.startswith("["):
            await self._raw(line, background)
            return
        command, rest = _split_word(line)
        try:
            if command in ("run", "stream", "prompt"):
                name, text = _split_word(rest)
                if not name or not text:
                    raise ValueError(f"usage: {command} NAME TEXT")
                await self._run(command, name, _run_input(text), background)
            elif command == "image":
                await self._image(rest, background)
            elif command == "create":
                await self._create(rest)
            elif command in ("history", "reset"):
                name, _ = _split_word(rest)
                if not name:
                    raise ValueError(f"usage: {command} NAME")
                await (self._history(name) if command == "history" else self._reset(name))
            elif command == "agents":
                await self._agents()
            elif command == "cancel":
                self.cancel_all(quiet=False)
            elif command == "help":
                self.screen.line(HELP)
            else:
                raise ValueError(f"unknown command {command!r}; type help")
        except RpcError as error:
            self.screen.line(describe_error(error))
        except (ValueError, OSError) as error:
            self.screen.line(f"error: {_one_line(str(error))}")

    def _agent_id(self, name: str) -> str:
        return self.agents.get(name, name)

    async def _request(self, method: str, params: Any) -> Any:
        assert self.client is not None
        return await self.client.request(method, params, timeout=120)

    async def _create(self, rest: str) -> None:
        name, text = _split_word(rest)
        if not name or not text:
            raise ValueError("usage: create NAME {json config}")
        try:
            config = json.loads(text)
        except ValueError as error:
            raise ValueError(f"the config is not JSON: {error}") from None
        if not isinstance(config, dict):
            raise ValueError("the config must be a JSON object")
        config.setdefault("name", name)
        agent_id = (await self._request("agent/create", {"config": config}))["agentId"]
        previous = self.agents.get(name)
        self.agents[name] = agent_id
        note = ""
        if previous is not None:
            with contextlib.suppress(RpcError):
                await self._request("agent/dispose", {"agentId": previous})
            note = f", replacing {previous}"
        self.screen.line(f"created {name} ({agent_id}{note})")

    async def _image(self, rest: str, background: bool) -> None:
        name, rest = _split_word(rest)
        path_text, question = _split_word(rest)
        if not name or not path_text:
            raise ValueError("usage: image NAME FILE QUESTION")
        media_type, data = await asyncio.to_thread(_read_image, path_text)
        blocks: list[dict[str, Any]] = [{"type": "text", "text": question}] if question else []
        blocks.append(
            {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
        )
        await self._run("prompt", name, blocks, background)

    async def _run(self, command: str, name: str, run_input: Any, background: bool) -> None:
        assert self.client is not None
        params: dict[str, Any] = {"agentId": self._agent_id(name), "input": run_input}
        token = f"console-{next(self._tokens)}"
        if command == "stream":
            params["partialResultToken"] = token
            self._streams[token] = name
        else:  # its steps show in the status line above the prompt
            params["workDoneToken"] = token
            self._reporting[token] = name
        method = "agent/prompt" if command == "prompt" else f"agent/{command}"
        msg_id, pending = self.client.start_request(method, params)
        self.runs[msg_id] = f"{command} {name} (#{msg_id})"
        hint = _shape_hint(command, run_input)
        finished = self._spawn_task(self._report_run(command, name, msg_id, pending, token, hint))
        if not background:
            await finished

    async def _report_run(
        self, command: str, name: str, msg_id: Any, pending: Any, token: str, hint: str | None
    ) -> None:
        """Show how a run ended; ``hint`` follows an error answer (the shape
        the command takes, when the input had another)."""
        started = time.monotonic()
        try:
            response = await pending
        except ConnectionError:
            if not self.closing:
                self.screen.line(f"[{name}: the host closed the connection]")
            return
        finally:
            self.runs.pop(msg_id, None)
            self._streams.pop(token, None)
            if self._reporting.pop(token, None) is not None:
                self.screen.status(token, None)
        elapsed = time.monotonic() - started
        error = response.get("error")
        if isinstance(error, dict):
            data = error.get("data") if isinstance(error.get("data"), dict) else {}
            partial = data.get("partial") if isinstance(data, dict) else None
            if error.get("code") == ErrorCode.REQUEST_CANCELLED and isinstance(partial, dict):
                if command != "stream" and partial.get("output"):
                    self.screen.line(str(partial["output"]))
                self.screen.line(f"[{name}: cancelled after {elapsed:.2f}s]")
            else:
                rpc = RpcError(error.get("code", 0), str(error.get("message", "")), data)
                self.screen.line(describe_error(rpc) + (f"\n  {hint}" if hint else ""))
            return
        result = response.get("result") or {}
        status = result.get("status") or {}
        output = str(result.get("output", ""))
        message = str(status.get("message", ""))
        if command != "stream" and output and output != message:
            self.screen.line(output)
        if result.get("success"):
            usage = result.get("tokenUsage") or {}
            tokens = f"{usage.get('input_tokens', 0)}/{usage.get('output_tokens', 0)} tokens"
            self.screen.line(f"[{name}: ok, {elapsed:.2f}s, {tokens}]")
        else:
            self.screen.line(f"[{name}: {status.get('code', 'error')}: {_one_line(message)}]")

    async def _history(self, name: str) -> None:
        history = await self._request("agent/history", {"agentId": self._agent_id(name)})
        for message in history["messages"] or [{"role": f"({name} has no history)"}]:
            parts = [_describe_block(block) for block in message.get("content", [])]
            self.screen.line(" ".join([f"{message.get('role')}:", *parts]).rstrip(":"))

    async def _reset(self, name: str) -> None:
        await self._request("agent/reset", {"agentId": self._agent_id(name)})
        self.screen.line(f"reset {name}")

    async def _agents(self) -> None:
        agents = (await self._request("agent/list", {}))["agents"]
        names = {agent_id: name for name, agent_id in self.agents.items()}
        if not agents:
            self.screen.line("(no agents)")
        for agent in agents:
            agent_id = agent.get("agentId")
            backend = agent.get("backend") or "llm"
            label = names.get(agent_id, "-")
            self.screen.line(f"{label:<12} {agent_id:<10} {agent.get('name')}  ({backend})")

    async def _raw(self, line: str, background: bool) -> None:
        assert self.client is not None
        try:
            message: Any = json.loads(line)
        except ValueError:
            message = None  # sent anyway: the host's answer (-32700) is the point
        if _gets_no_answer(message):
            self.client.send_bytes(_frame(line))
            self.screen.line("(sent; no answer expected)")
            return
        key = message.get("id") if isinstance(message, dict) else None
        key = key if valid_id(key) else None
        try:
            reply = self.client.expect_reply(key)
        except ValueError as error:
            self.screen.line(f"error: {error}")
            return
        self.client.send_bytes(_frame(line))
        if key is not None:
            self.runs[key] = f"raw request (#{key})"
        finished = self._spawn_task(self._report_raw(key, reply))
        if not background:
            await finished

    async def _report_raw(self, key: Any, reply: asyncio.Future[Any]) -> None:
        try:
            message = await reply
        except ConnectionError:
            return
        finally:
            self.runs.pop(key, None)
        # jsonrpc and id first, however the host ordered them: easier to read.
        ordered = {name: message[name] for name in ("jsonrpc", "id") if name in message}
        self.screen.line(json.dumps(ordered | message, ensure_ascii=False))

    def cancel_all(self, *, quiet: bool = True) -> None:
        """Send ``$/cancelRequest`` for every request in flight."""
        if self.client is None or self.host_gone:
            return
        for msg_id in list(self.runs):
            self.client.cancel(msg_id)
        if self.runs:
            self.screen.line("cancelling " + ", ".join(self.runs.values()))
        elif not quiet:
            self.screen.line("nothing to cancel")

    async def stop(self) -> int:
        """shutdown + exit; returns the host's exit code."""
        self.closing = True
        if self.client is None:
            return 0
        code = await self.client.close(timeout=20)
        for task in list(self._tasks):
            task.cancel()
        return code


def _read_image(path_text: str) -> tuple[str, str]:
    """The media type (from the extension) and base64 data of an image file."""
    path = Path(path_text).expanduser()
    media_type = _IMAGE_TYPES.get(path.suffix.lower())
    if media_type is None:
        raise ValueError(f"{path.name}: not an image type I know ({', '.join(_IMAGE_TYPES)})")
    try:
        data = path.read_bytes()
    except OSError as error:  # its str() repeats the path after an errno
        raise ValueError(f"cannot read {path}: {error.strerror or error}") from None
    if not data:
        raise ValueError(f"{path} is empty")
    return media_type, base64.b64encode(data).decode("ascii")


def _frame(line: str) -> bytes:
    from oma_host.wire.framing import encode_frame

    return encode_frame(line.encode())
