"""``oma-host acp``'s early answer: ``initialize`` answered before anything
heavy is imported.

Editors spawn the door and wait for its answer to ``initialize``. The
interpreter starts in about 10 ms; what checks the agents' configs
(pydantic and the config models), asyncio and the ACP library take twenty
times that to import. So the command's entry point (:mod:`oma_host.cli.entry`)
calls :func:`answer_early` before it imports anything else, and this module
imports nothing but ``os`` and the host's import-free modules. It reads the
first request from stdin and, when that is a plain ``initialize`` (the shape
:func:`.handshake.plain_initialize` takes), answers it from the agents file
as written: the answer needs each agent's provider and key fields alone, and
the providers' auth methods (``provider_auth.json``, generated from the
descriptors). The door then starts as it always has: the configs are
checked, from the very bytes the answer was made from (an invalid one
refuses every session request, naming the file, the JSON path and the
problem), the answer is compared with the checked configs' own, and the
door serves the rest of stdin.

It answers only what it reads exactly as the door would: a command line of
``acp`` and its own options (:data:`oma_host.core.cli_options.ACP_OPTIONS`, each
value checked as the parser checks it, and the flags of ``ACP_FLAGS``), agents
whose provider and key fields have the types a config takes and name an
offered provider, and a first line that is a plain ``initialize``. For
anything else it declines, and the door does what it did before there was
an early answer (check, then serve), from the bytes read so far.
"""

from __future__ import annotations

import os

from oma_host.acp_server.handshake import env_var_method, initialize_result, plain_initialize
from oma_host.core import quickjson
from oma_host.core.cli_options import ACP_FLAGS, ACP_OPTIONS
from oma_host.core.credentials import stored_key, stored_variables
from oma_host.core.places import config_dir, private_folder
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

_TABLE = os.path.join(os.path.dirname(__file__), "provider_auth.json")
_READ = 65_536


class EarlyStart:
    """What the early answer leaves the door: the bytes of stdin it read and
    did not consume and, when it answered, the client's capabilities, the
    answer it wrote and the agents file it answered for (its path and bytes,
    None for the default agent), which the door then serves rather than read
    the file again."""

    __slots__ = ("agents_file", "answer", "capabilities", "pending")

    def __init__(
        self,
        pending: bytes,
        capabilities: dict[str, Any] | None = None,
        answer: dict[str, Any] | None = None,
        agents_file: tuple[str, bytes] | None = None,
    ) -> None:
        self.pending = pending
        self.capabilities = capabilities
        self.answer = answer
        self.agents_file = agents_file


class _NotExact(Exception):
    """What the early answer reads is not read exactly as the door reads it:
    the door goes its usual way."""


def answer_early(argv: list[str]) -> EarlyStart | None:
    """Answer the first request if it is a plain ``initialize`` of
    ``oma-host acp`` serving as ``argv`` says (None: not such a command line,
    or agents it does not read exactly; stdin untouched)."""
    try:
        options = _acp_options(argv)
        methods, agents_file = _env_var_methods(options.get("--agents"))
    except _NotExact:
        return None
    limit = int(options.get("--max-message-bytes", DEFAULT_MAX_MESSAGE_BYTES))
    line, pending = _first_line(limit)
    if line is None:
        return EarlyStart(pending)
    try:
        request_id, capabilities = _plain_initialize(line)
    except _NotExact:
        return EarlyStart(line + b"\n" + pending)
    answer = initialize_result(methods, capabilities)
    reply = {"jsonrpc": "2.0", "id": request_id, "result": answer}
    _write_all((quickjson.dumps(reply) + "\n").encode())
    return EarlyStart(pending, capabilities, answer, agents_file)


def _acp_options(argv: list[str]) -> dict[str, str]:
    """``acp``'s options as given (``--name VALUE`` or ``--name=VALUE``, each
    value one the parser accepts; a flag maps to ""); any other command
    line is not read."""
    if argv[:1] != ["acp"]:
        raise _NotExact
    options: dict[str, str] = {}
    words = iter(argv[1:])
    for word in words:
        if word in ACP_FLAGS:
            options[word] = ""
            continue
        name, equals, value = word.partition("=")
        check = ACP_OPTIONS.get(name)
        if check is None:
            raise _NotExact  # help, login, an abbreviation, an unknown word: the parser's
        if not equals:
            value = next(words, "-")
            if value.startswith("-"):  # argparse takes no option-like value here
                raise _NotExact
        try:
            check(value)
        except ValueError:
            raise _NotExact from None
        options[name] = value
    return options


def _env_var_methods(
    agents_option: str | None,
) -> tuple[list[dict[str, Any]], tuple[str, bytes] | None]:
    """The ``env_var`` auth methods of the agents the door will serve, sorted
    by id, as :func:`.auth.env_auth_methods` gives them for the checked
    configs; and the agents file read (None: the default agent)."""
    table = _read_json(_TABLE)
    path = agents_option
    if path is None:
        path = os.path.join(config_dir(), "agents.json")
        if not os.path.isfile(path):
            return _methods([_default_agent(table)], table), None
        try:
            private_folder(config_dir())
        except OSError:  # the door says why it reads no agents from there
            raise _NotExact from None
    data = _read_file(path)
    agents = _parsed(data)
    if not isinstance(agents, list) or not agents:
        raise _NotExact
    return _methods(agents, table), (path, data)


def _methods(agents: list[Any], table: dict[str, Any]) -> list[dict[str, Any]]:
    methods = {method["id"]: method for agent in agents for method in _agent_methods(agent, table)}
    return [methods[key] for key in sorted(methods)]


def _agent_methods(agent: Any, table: dict[str, Any]) -> list[dict[str, Any]]:
    """One agent's auth methods: none for an external agent or one with its
    own ``apiKey``, else its ``apiKeyEnv`` or its provider's."""
    if not isinstance(agent, dict):
        raise _NotExact
    if agent.get("backend") is not None:
        return []
    api_key = _text_field(agent, "apiKey", "api_key")
    api_key_env = _text_field(agent, "apiKeyEnv", "api_key_env")
    provider = _text_field(agent, "provider", "provider")
    if api_key:
        return []
    if api_key_env:
        return [env_var_method((api_key_env,))]
    facts = table["providers"].get(provider or table["defaultProvider"])
    if facts is None or not _offered(facts):
        raise _NotExact  # a provider the checks refuse: they say so before any traffic
    return [
        env_var_method(tuple(m["required"]), tuple(m["optional"]), tuple(m["public"]))
        for m in facts["authMethods"]
    ]


def _text_field(agent: dict[str, Any], alias: str, name: str) -> str | None:
    """A config field given by its alias or its name: a string or null, given once."""
    given = [agent[key] for key in {alias, name} if key in agent]
    if len(given) > 1 or (given and given[0] is not None and type(given[0]) is not str):
        raise _NotExact
    return given[0] if given else None


def _offered(facts: dict[str, Any]) -> bool:
    variable = facts["offeredWhen"]
    return variable is None or os.environ.get(variable) == "1"


def _default_agent(table: dict[str, Any]) -> dict[str, Any]:
    """The default agent's provider: the first candidate whose key is set in
    the environment or kept by ``oma-host login``, as
    :func:`oma_host.acp_server.agents.default_agent` picks it. A key kept in
    the keyring is not read exactly here (the keyring is too heavy to import
    and may not give it back): the door picks."""
    stored = stored_variables()
    for name in table["defaultCandidates"]:
        facts = table["providers"][name]
        if not _offered(facts):
            continue
        for variable in facts["keyVariables"]:
            if os.environ.get(variable):
                return {"provider": name}
            where = stored.get(variable)
            if where == "keyring":
                raise _NotExact
            if where == "file" and stored_key(variable):
                return {"provider": name}
    return {"provider": table["defaultProvider"]}


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError:
        raise _NotExact from None


def _parsed(data: bytes) -> Any:
    try:
        return quickjson.loads(data.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is a ValueError
        raise _NotExact from None


def _read_json(path: str) -> Any:
    return _parsed(_read_file(path))


def _first_line(limit: int) -> tuple[bytes | None, bytes]:
    """The first line of stdin (without its newline) and the bytes read after
    it; None and every byte read when stdin ends, fails or passes ``limit``
    before a newline."""
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(0, _READ)
        except OSError:
            chunk = b""
        if not chunk:
            return None, b"".join(chunks)
        newline = chunk.find(b"\n")
        chunks.append(chunk)
        if newline >= 0:
            read = b"".join(chunks)
            end = size + newline
            return (read[:end], read[end + 1 :]) if end <= limit else (None, read)
        size += len(chunk)
        if size > limit:
            return None, b"".join(chunks)


def _plain_initialize(line: bytes) -> tuple[int | str, dict[str, Any]]:
    """The id and client capabilities of ``line``, a plain ``initialize`` request."""
    try:
        message = quickjson.loads(line.decode("utf-8"))
    except ValueError:
        raise _NotExact from None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        raise _NotExact
    request_id = message["id"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        raise _NotExact
    if type(request_id) is not int and type(request_id) is not str:
        raise _NotExact
    capabilities = plain_initialize(message["params"])
    if capabilities is None or not _encodable(message["params"]):
        raise _NotExact
    return request_id, capabilities


def _encodable(value: Any) -> bool:
    """Whether every string in ``value`` is UTF-8 (the wire refuses a lone
    surrogate, which JSON's escapes can spell)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_encodable(key) and _encodable(item) for key, item in value.items())
    if isinstance(value, list):
        return all(_encodable(item) for item in value)
    return True


def _write_all(data: bytes) -> None:
    """``data`` to stdout, all of it (a pipe may take part of a write)."""
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except OSError:  # the editor is gone: the door meets the same and ends
            return
        view = view[written:]
