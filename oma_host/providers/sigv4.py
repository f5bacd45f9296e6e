"""AWS Signature Version 4 for the Bedrock adapter, with its credentials and region.

Signing is the standard-library recipe, checked against botocore's signer in
the tests; credentials and region are found as the AWS SDKs find them. Profiles
needing the AWS CLI (``credential_process``, SSO, an assumed role) are
reported, not run.
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import os
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from oma_host.core.aws_profile import (
    ProfileFileError,
    credential_files,
    profile_name,
    profile_sections,
)
from oma_host.core.provider_facts import AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN

ALGORITHM = "AWS4-HMAC-SHA256"


class CredentialsError(Exception):
    """No usable AWS credentials or region; the message says where it looked."""


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str = field(repr=False)
    token: str | None = field(default=None, repr=False)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def canonical_uri(path: str) -> str:
    """The path percent-encoded once more, as every service but S3 signs it
    (a model id's ``:`` travels as ``%3A`` and is signed as ``%253A``)."""
    return quote(path or "/", safe="/~")


def canonical_query(query: str) -> str:
    pairs = sorted(tuple(pair.partition("=")[::2]) for pair in query.split("&") if pair)
    return "&".join(f"{key}={value}" for key, value in pairs)


def signing_key(secret_key: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret_key}".encode(), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return key


def credential_scope(amz_date: str, region: str, service: str) -> str:
    return f"{amz_date[:8]}/{region}/{service}/aws4_request"


def signature(
    credentials: Credentials,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    region: str,
    service: str,
    amz_date: str,
) -> tuple[str, str]:
    """The signature of a request whose ``headers`` (lower-case names,
    ``host`` among them) are the ones signed, and the signed-headers list."""
    parts = urlsplit(url)
    names = sorted(headers)
    canonical = "\n".join(
        [
            method.upper(),
            canonical_uri(parts.path),
            canonical_query(parts.query),
            "".join(f"{name}:{' '.join(headers[name].split())}\n" for name in names),
            ";".join(names),
            _sha256(body),
        ]
    )
    scope = credential_scope(amz_date, region, service)
    to_sign = f"{ALGORITHM}\n{amz_date}\n{scope}\n{_sha256(canonical.encode())}"
    key = signing_key(credentials.secret_key, amz_date[:8], region, service)
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest(), ";".join(names)


def host_of(url: str) -> str:
    """The Host header for ``url``: its host, and its port unless the scheme's default."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def sign_request(
    credentials: Credentials,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    *,
    region: str,
    service: str,
    now: datetime.datetime | None = None,
) -> dict[str, str]:
    """``headers`` plus ``host``, ``x-amz-date``, the session token and
    ``authorization``: every header given is signed."""
    moment = now or datetime.datetime.now(datetime.UTC)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    signed = {name.lower(): value for name, value in headers.items()}
    signed["host"] = host_of(url)
    signed["x-amz-date"] = amz_date
    if credentials.token:
        signed["x-amz-security-token"] = credentials.token
    value, names = signature(
        credentials, method, url, signed, body, region=region, service=service, amz_date=amz_date
    )
    scope = credential_scope(amz_date, region, service)
    signed["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
        f"SignedHeaders={names}, Signature={value}"
    )
    return signed


# --------------------------------------------------------------------------
# Credentials and region


def resolve_credentials() -> Credentials:
    access = os.environ.get(AWS_ACCESS_KEY_ID)
    secret = os.environ.get(AWS_SECRET_ACCESS_KEY)
    if access and secret:
        return Credentials(access, secret, os.environ.get(AWS_SESSION_TOKEN) or None)
    profile = profile_name()
    try:
        credentials_section, config_section = profile_sections(profile)
    except ProfileFileError as error:
        raise CredentialsError(str(error)) from None
    for section in (credentials_section, config_section):
        if section.get("aws_access_key_id") and section.get("aws_secret_access_key"):
            return Credentials(
                section["aws_access_key_id"],
                section["aws_secret_access_key"],
                section.get("aws_session_token") or None,
            )
    merged = {**config_section, **credentials_section}
    other = [
        key
        for key in ("credential_process", "sso_session", "sso_start_url", "role_arn")
        if key in merged
    ]
    credentials_file, config_file = credential_files()
    hint = (
        f"; profile {profile!r} uses {', '.join(other)}, which oma-host does not run "
        "(run `aws configure export-credentials --format env` and set the variables)"
        if other
        else ""
    )
    raise CredentialsError(
        f"no AWS credentials: set {AWS_ACCESS_KEY_ID} and {AWS_SECRET_ACCESS_KEY}, or give "
        f"profile {profile!r} aws_access_key_id and aws_secret_access_key in "
        f"{credentials_file} or {config_file}{hint}"
    )


def resolve_region() -> str:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        return region
    profile = profile_name()
    try:
        _, config_section = profile_sections(profile)
    except ProfileFileError as error:
        raise CredentialsError(str(error)) from None
    if config_section.get("region"):
        return config_section["region"]
    raise CredentialsError(
        f"no AWS region: set AWS_REGION (or AWS_DEFAULT_REGION), or give profile {profile!r} "
        f"a region in {credential_files()[1]}"
    )
