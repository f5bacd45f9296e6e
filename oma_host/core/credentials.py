"""Provider keys kept by ``oma-host login``, read after the environment.

A key is stored under its provider's key variable (``ANTHROPIC_API_KEY``):
in the OS keyring through the ``keyring`` package where one is available
(service ``oma-host``), else in ``$XDG_CONFIG_HOME/oma-host/credentials.json``
(mode 0600 in a 0700 folder: the folder is tightened to 0700 when read or
written, and not used at all when it is a symbolic link or another user's,
:func:`~oma_host.core.places.private_folder`; ``login`` then fails naming
it, and a host reads no stored key and warns once). Either way an index file beside it,
``logins.json``, names the variables stored and where, never a key, so
that reading an agent's secrets (redaction) costs one small file read and
imports ``keyring`` only when a key is in it.

:func:`key_for` is what the providers and the ACP door read: the variable
from the environment, else the stored key. An empty environment variable
counts as unset, as the providers have always read it.
"""

from __future__ import annotations

import os

from oma_host.core import quickjson
from oma_host.core.places import FolderError, config_dir, private_folder

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, Literal

    Store = Literal["keyring", "file"]

SERVICE = "oma-host"


def _index_path() -> str:
    return os.path.join(config_dir(), "logins.json")


def file_path() -> str:
    """Where keys go when there is no usable keyring."""
    return os.path.join(config_dir(), "credentials.json")


_refused: set[str] = set()  # what a refused folder was said to be, once each


def _read_json(path: str) -> dict[str, Any]:
    """The JSON object in ``path``; empty when there is none or its folder
    is not the user's own (said once, as a warning)."""
    try:
        private_folder(os.path.dirname(path))
    except FileNotFoundError:
        return {}
    except FolderError as error:
        if str(error) not in _refused:
            import logging  # a refused folder's alone

            _refused.add(str(error))
            logging.getLogger(__name__).warning(
                "keys stored by oma-host login are not read: %s", error
            )
        return {}
    try:
        with open(path, encoding="utf-8") as file:
            data = quickjson.loads(file.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: str, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` atomically, readable by the user alone (a
    FolderError when its folder is not the user's own)."""
    import contextlib  # writing is login's and logout's alone
    import json
    import tempfile

    folder, name = os.path.split(path)
    private_folder(folder, create=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2, sort_keys=True)
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def stored_variables() -> dict[str, Store]:
    """The variables a key is stored for, and where."""
    index = _read_json(_index_path())
    return {name: where for name, where in index.items() if where in ("keyring", "file")}


def _keyring() -> Any | None:
    """The ``keyring`` module when it has a usable backend, else None (no
    package, or only the fail or null backends of a machine without one)."""
    try:
        import keyring
        from keyring.backends import fail, null
    except ImportError:
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring | null.Keyring):
        return None
    return keyring


def stored_key(variable: str) -> str | None:
    """The key stored for ``variable``, or None."""
    where = stored_variables().get(variable)
    if where == "file":
        value = _read_json(file_path()).get(variable)
        return value if isinstance(value, str) and value else None
    if where == "keyring" and (keyring := _keyring()) is not None:
        try:
            value = keyring.get_password(SERVICE, variable)
        except Exception:  # a locked or broken keyring: not stored
            return None
        return value if isinstance(value, str) and value else None
    return None


def key_for(variable: str) -> str | None:
    """``variable`` from the environment, else its stored key."""
    return os.environ.get(variable) or stored_key(variable)


def stored_keys() -> Iterator[str]:
    """Every stored key (for redaction)."""
    for variable in stored_variables():
        if (key := stored_key(variable)) is not None:
            yield key


def store_key(variable: str, key: str) -> Store:
    """Keep ``key`` for ``variable``: in the keyring when one is usable,
    else in the credentials file. Where it went."""
    keyring = _keyring()
    where: Store = "file"
    if keyring is not None:
        try:
            keyring.set_password(SERVICE, variable, key)
            where = "keyring"
        except Exception:  # a keyring that refuses (locked, no agent): the file
            where = "file"
    stored = _read_json(file_path())
    if where == "file":
        _write_json(file_path(), {**stored, variable: key})
    elif variable in stored:  # moved to the keyring: no copy left behind
        del stored[variable]
        _write_json(file_path(), stored)
    _write_json(_index_path(), {**stored_variables(), variable: where})
    return where


def forget_stored_keys() -> list[str]:
    """Remove every stored key; the variables whose keys were removed."""
    return [variable for variable in list(stored_variables()) if forget_key(variable)]


def forget_key(variable: str) -> bool:
    """Remove the key stored for ``variable``; False when there was none."""
    index = stored_variables()
    where = index.pop(variable, None)
    if where is None:
        return False
    if where == "keyring" and (keyring := _keyring()) is not None:
        import contextlib  # logout's alone

        with contextlib.suppress(Exception):  # locked or broken: the index forgets it anyway
            keyring.delete_password(SERVICE, variable)
    stored = _read_json(file_path())
    if variable in stored:
        del stored[variable]
        _write_json(file_path(), stored)
    _write_json(_index_path(), index)
    return True
