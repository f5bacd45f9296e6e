"""The TCP door's token: who may talk to the host over a network.

Stdio needs no check: whoever spawned the host owns its pipes. A TCP port is
open to every local user and web page (a browser will POST to 127.0.0.1), so a
connection's ``initialize`` must carry a token only the user can read: kept in
a private file named by the port, compared in constant time, removed when the
server stops. docs/security.md, "TCP".
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

from oma_host.core.places import FolderError, private_folder

_TOKEN_BYTES = 32
_TOKEN_FILE_MAX = 4096
# The shortest token a --token-file may hold: 32 random bytes are 43
# characters in URL-safe base64 (what new_token makes), 64 in hex.
MIN_TOKEN_CHARS = 32
# Room for the first message of a connection that has not yet shown the
# token: an initialize, with its initializationOptions, and no more.
UNAUTHENTICATED_MAX_MESSAGE_BYTES = 1024 * 1024
# An HTTP request line (methods of RFC 9110, WebDAV's are no different, and
# HTTP/2's preface), as detect_framing hands over the first bytes.
_HTTP_REQUEST = re.compile(rb"[A-Z]{3,16} ")
# LSP's two headers; any other header name first is an HTTP-speaking client.
_LSP_HEADERS = (b"content-length:", b"content-type:")


class TokenFileError(Exception):
    """A token file (or its directory) that cannot be used, and why."""


# hmac and secrets are imported where used: every session loads this module,
# and a stdio host never needs them.


def new_token() -> str:
    import secrets

    return secrets.token_urlsafe(_TOKEN_BYTES)


def token_matches(expected: str, given: Any) -> bool:
    """Whether ``given`` (from the wire: any JSON value) is the token, compared
    in constant time."""
    import hmac

    if not isinstance(given, str):
        return False
    return hmac.compare_digest(expected.encode(), given.encode(errors="replace"))


def looks_like_http(first: bytes) -> bool:
    """Whether a connection's first bytes (a header name with its colon, or a
    word and the byte after it, see ``framing.detect_framing``) are HTTP's."""
    if _HTTP_REQUEST.fullmatch(first):
        return True
    return first.endswith(b":") and first.lower() not in _LSP_HEADERS


def token_dir() -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "oma-host"
    return Path(tempfile.gettempdir()) / f"oma-host-{os.getuid()}"


def token_path(port: int, kind: str = "tcp") -> Path:
    """Where the token of the host serving TCP on ``port`` is kept (``kind``
    ``runs``: of the run viewer serving there)."""
    return token_dir() / f"{kind}-{port}.token"


def _private_dir(directory: Path, *, create: bool) -> Path:
    """``directory`` (made 0700 when ``create`` and missing, else tightened to
    it), refused unless it is a real directory of this user
    (:func:`~oma_host.core.places.private_folder`)."""
    try:
        private_folder(str(directory), create=create)
    except FolderError as error:
        raise TokenFileError(str(error)) from None
    return directory


def write_token_file(port: int, token: str, kind: str = "tcp") -> Path:
    """Keep ``token`` for ``port`` in a fresh 0600 file (:func:`token_path`);
    returns its path. The file appears whole (written aside, then renamed
    over any stale one)."""
    _private_dir(token_dir(), create=True)
    path = token_path(port, kind)
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        aside.unlink()
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token + "\n")
    os.replace(aside, path)
    return path


def read_token_file(path: Path) -> str:
    """The token in ``path``, which must be a regular file of this user that
    nobody else can read or write."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as error:
        raise TokenFileError(f"cannot open the token file {path}: {error.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise TokenFileError(f"the token file {path} is not a regular file of this user")
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise TokenFileError(
                f"the token file {path} is open to other users "
                f"(mode {info.st_mode & 0o777:o}; make it 0600)"
            )
        token = file.read(_TOKEN_FILE_MAX).decode(errors="replace").strip()
    if not token:
        raise TokenFileError(f"the token file {path} is empty")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenFileError(
            f"the token in {path} is {len(token)} characters; a token must have at least "
            f"{MIN_TOKEN_CHARS} (make one of 32 random bytes, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return token


def discover_token(port: int, token_file: str | os.PathLike[str] | None = None) -> str:
    """The token for a host on ``port``: from ``token_file``, else from the
    file the host keeps for that port (its directory must be private too)."""
    if token_file is not None:
        return read_token_file(Path(token_file))
    path = token_path(port)
    try:
        _private_dir(path.parent, create=False)
        return read_token_file(path)
    except FileNotFoundError:
        raise TokenFileError(
            f"no token file for port {port} ({path}): no host of this user serves "
            "--tcp there, or it keeps its token elsewhere (pass its token file)"
        ) from None


def remove_token_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
