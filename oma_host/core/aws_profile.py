"""The AWS shared credentials and config files, read as the AWS SDKs read them.

Standard library only, because two layers read the same files: the Bedrock
adapter signs with the keys found there, and redaction must know those keys as
secrets.
"""

from __future__ import annotations

import configparser
import os
from pathlib import Path

# The keys of a profile that are secrets; the access key id names a key and is not one.
SECRET_KEYS = ("aws_secret_access_key", "aws_session_token")


class ProfileFileError(Exception):
    """A credentials or config file that exists and cannot be parsed."""


def profile_name() -> str:
    return os.environ.get("AWS_PROFILE") or "default"


def credential_files() -> tuple[Path, Path]:
    """The shared credentials file and the config file, existing or not."""
    home = Path.home() / ".aws"
    credentials = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or str(home / "credentials")
    config = os.environ.get("AWS_CONFIG_FILE") or str(home / "config")
    return Path(credentials).expanduser(), Path(config).expanduser()


def _section(path: Path, name: str) -> dict[str, str]:
    if not path.is_file():
        return {}
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as error:
        raise ProfileFileError(f"{path} cannot be read: {error}") from None
    return dict(parser[name]) if parser.has_section(name) else {}


def profile_sections(profile: str) -> tuple[dict[str, str], dict[str, str]]:
    """The profile's section in the credentials file and in the config file
    (``[profile NAME]`` there, ``[default]`` for the default)."""
    credentials_file, config_file = credential_files()
    in_config = profile if profile == "default" else f"profile {profile}"
    return _section(credentials_file, profile), _section(config_file, in_config)


def profile_secrets() -> tuple[str, ...]:
    """The secret values the active profile holds in either file; none when
    the files are missing or unreadable (the adapter reports those when it
    signs)."""
    try:
        sections = profile_sections(profile_name())
    except (ProfileFileError, OSError):
        return ()
    return tuple(section[key] for section in sections for key in SECRET_KEYS if section.get(key))
