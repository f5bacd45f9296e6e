"""The ACP door's ``initialize`` answer and the read of its first request.

Editors wait for this answer, so it imports nothing heavy: the door writes
it before pydantic and the ACP library are loaded."""

from __future__ import annotations

import os
import sys

from oma_host.core import quickjson
from oma_host.core.version import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

# The ACP version the door speaks (the library's PROTOCOL_VERSION; a test
# holds them equal).
PROTOCOL_VERSION = 1
_UINT16 = 65_535

# The requests the door serves (:func:`.routes.door_routes`' table, which a
# test holds equal), known before the door is imported: a request for any
# other method is answered -32601 at once.
SERVED_REQUESTS = frozenset(
    {
        "initialize",
        "authenticate",
        "logout",
        "session/new",
        "session/load",
        "session/list",
        "session/resume",
        "session/fork",
        "session/close",
        "session/delete",
        "session/prompt",
        "session/set_config_option",
        "session/set_mode",
        "_oma/session/rewind",  # the door's extension (routes.REWIND_METHOD)
    }
)

# The terminal auth method: the editor runs ``oma-host acp login`` in a
# terminal (its launch command with these args), which stores a key.
LOGIN_METHOD: dict[str, Any] = {
    "id": "oma-host-login",
    "name": "Log in with a provider key",
    "description": "Choose a provider and paste its key; oma-host keeps it in the OS keyring "
    "(else a file only you can read) and reads it when the key's variable is not set",
    "args": ["login"],
    "type": "terminal",
}
# The legacy opt-in (before ``auth.terminal``), which the ACP Registry's check
# and JetBrains send: ``clientCapabilities._meta["terminal-auth"]``. Such a
# client runs the method's own ``_meta["terminal-auth"]`` command, not the
# agent's launch command, so that names this interpreter and module.
LEGACY_TERMINAL_AUTH = "terminal-auth"
LOGIN_LABEL = "oma-host login"


def legacy_login_command() -> dict[str, Any]:
    """What a legacy client runs in a terminal to log in: this interpreter,
    by its absolute path, running ``oma-host acp login``."""
    return {
        "command": sys.executable,
        "args": ["-m", "oma_host", "acp", "login"],
        "label": LOGIN_LABEL,
    }


_BOOLEAN_GROUPS = {"fs": {"readTextFile", "writeTextFile"}, "auth": {"terminal"}}


def _plain_meta(value: Any) -> bool:
    """A ``_meta`` as editors send it: an object of booleans (the legacy
    ``terminal-auth`` opt-in, ``terminal_output``, ``gateway``)."""
    return type(value) is dict and all(type(flag) is bool for flag in value.values())


def _plain_capabilities(capabilities: Any) -> bool:
    if type(capabilities) is not dict:
        return False
    for key, value in capabilities.items():
        if key == "terminal":
            if type(value) is not bool:
                return False
        elif key == "_meta":
            if not _plain_meta(value):
                return False
        elif key in _BOOLEAN_GROUPS:
            if type(value) is not dict or not value.keys() <= _BOOLEAN_GROUPS[key] | {"_meta"}:
                return False
            for flag, flag_value in value.items():
                plain = _plain_meta(flag_value) if flag == "_meta" else type(flag_value) is bool
                if not plain:
                    return False
        else:
            return False
    return True


def _plain_client_info(info: Any) -> bool:
    return (
        type(info) is dict
        and info.keys() <= {"name", "version", "title"}
        and {"name", "version"} <= info.keys()
        and all(type(value) is str for value in info.values())
    )


def plain_initialize(params: Any) -> dict[str, Any] | None:
    """The client capabilities of an ``initialize`` in the plain shape
    (``protocolVersion`` an int, capabilities of booleans this door reads,
    ``clientInfo`` of strings), or None for anything else."""
    if type(params) is not dict or not params.keys() <= {
        "protocolVersion",
        "clientCapabilities",
        "clientInfo",
    }:
        return None
    version = params.get("protocolVersion")
    if type(version) is not int or not 0 <= version <= _UINT16:
        return None
    capabilities = params.get("clientCapabilities", {})
    if not _plain_capabilities(capabilities):
        return None
    if "clientInfo" in params and not _plain_client_info(params["clientInfo"]):
        return None
    plain: dict[str, Any] = capabilities
    return plain


def env_var_method(
    required: tuple[str, ...], optional: tuple[str, ...] = (), public: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The ACP ``env_var`` auth method whose ``required`` variables must all
    be set (``optional`` ones are read when set; all are secrets but the
    ``public`` ones): the wire form of a provider's
    :class:`~oma_host.core.provider_facts.AuthMethod`."""
    names = " and ".join(f"${name}" for name in required)
    what = "key" if len(required) == 1 else "credentials"
    variables: list[dict[str, Any]] = [
        {"name": name, "secret": name not in public} for name in required
    ]
    variables += [{"name": name, "secret": True, "optional": True} for name in optional]
    return {
        "id": "env:" + "+".join(required),
        "name": " and ".join(required),
        "description": f"oma-host reads the provider {what} from {names}",
        "vars": variables,
        "type": "env_var",
    }


def terminal_login(capabilities: dict[str, Any]) -> dict[str, Any] | None:
    """The ``terminal`` login method for a client that runs terminal logins:
    one with ``auth.terminal``, or with the legacy
    ``_meta["terminal-auth"]``, whose method also carries the command to
    run (when that was its only opt-in); None for any other client."""
    auth = capabilities.get("auth")
    meta = capabilities.get("_meta")
    current = isinstance(auth, dict) and auth.get("terminal") is True
    legacy = isinstance(meta, dict) and meta.get(LEGACY_TERMINAL_AUTH) is True
    if current:
        return LOGIN_METHOD
    if legacy:
        return {**LOGIN_METHOD, "_meta": {LEGACY_TERMINAL_AUTH: legacy_login_command()}}
    return None


def initialize_result(
    env_var_methods: list[dict[str, Any]], capabilities: dict[str, Any]
) -> dict[str, Any]:
    """The ``initialize`` result for a client with ``capabilities`` (wire
    form) when the agents' keys can come from ``env_var_methods``: the door's
    capabilities, its auth methods (the ``terminal`` login first, to a client
    that runs terminal logins, as ACP requires) and who it is."""
    methods = list(env_var_methods)
    login = terminal_login(capabilities)
    if methods and login is not None:
        methods.insert(0, login)
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "auth": {"logout": {}},
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {
                "list": {},
                "delete": {},
                "fork": {},
                "resume": {},
                "close": {},
                "additionalDirectories": {},
            },
        },
        "authMethods": methods,
        "agentInfo": {"name": "oma-host", "title": "oma-host", "version": __version__},
    }


_READ = 65_536


class FirstRequest:
    """What the door read of stdin before it served: the bytes it has not
    consumed and, when the first request was a plain ``initialize`` it
    answered, the client's capabilities (else None)."""

    __slots__ = ("capabilities", "pending")

    def __init__(self, pending: bytes, capabilities: dict[str, Any] | None = None) -> None:
        self.pending = pending
        self.capabilities = capabilities


def answer_first_request(env_var_methods: list[dict[str, Any]], limit: int) -> FirstRequest:
    """Read stdin's first line and, when it is a plain ``initialize``, answer
    it with ``env_var_methods``; what was read and not answered is left to
    the door, which serves it as it serves every request."""
    line, pending = _first_line(limit)
    if line is None:
        return FirstRequest(pending)
    request = _plain_request(line)
    if request is None:
        return FirstRequest(line + b"\n" + pending)
    request_id, capabilities = request
    result = initialize_result(env_var_methods, capabilities)
    reply = quickjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})
    _write_all((reply + "\n").encode())
    return FirstRequest(pending, capabilities)


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


def _plain_request(line: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """The id and client capabilities of ``line`` when it is a plain
    ``initialize`` request; None for anything else (the routes answer it)."""
    try:
        message = quickjson.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    if not isinstance(message, dict) or message.keys() != {"jsonrpc", "id", "method", "params"}:
        return None
    request_id = message["id"]
    if message["jsonrpc"] != "2.0" or message["method"] != "initialize":
        return None
    if type(request_id) is not int and type(request_id) is not str:
        return None
    capabilities = plain_initialize(message["params"])
    if capabilities is None or not _encodable(message["params"]):
        return None
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
