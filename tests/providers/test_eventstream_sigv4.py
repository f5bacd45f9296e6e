"""The AWS pieces of the Bedrock adapter on their own: the event-stream
framing (decoded incrementally, CRCs checked) and SigV4, checked against
botocore's signer; where credentials and the region come from."""

from __future__ import annotations

import datetime
import struct
import uuid
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oma_host.providers import sigv4
from oma_host.providers.eventstream import (
    EventStreamDecoder,
    EventStreamError,
    encode_message,
)
from oma_host.testing.script import RecordedRequest
from tests.providers.gemini_bedrock import signature_is_valid

MESSAGES = [
    ({":event-type": "messageStart", ":message-type": "event"}, b'{"role":"assistant"}'),
    ({":event-type": "contentBlockDelta"}, '{"delta":{"text":"héllo"}}'.encode()),
    ({}, b""),
    ({":exception-type": "throttlingException"}, b'{"message":"slow"}' * 500),
]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=400))
def test_messages_come_out_whole_however_the_bytes_are_split(sizes: list[int]) -> None:
    data = b"".join(encode_message(headers, payload) for headers, payload in MESSAGES)
    decoder = EventStreamDecoder()
    got = []
    at = 0
    for size in sizes * (len(data) // max(1, sum(sizes)) + 1):
        got.extend(decoder.feed(data[at : at + size]))
        at += size
        if at >= len(data):
            break
    got.extend(decoder.feed(data[at:]))
    decoder.finish()
    assert [(m.headers, m.payload) for m in got] == MESSAGES


def test_a_message_is_given_out_as_soon_as_its_last_byte_arrives() -> None:
    first = encode_message({"a": "1"}, b"one")
    second = encode_message({"b": "2"}, b"two")
    decoder = EventStreamDecoder()
    assert decoder.feed(first[:-1]) == []
    assert [m.payload for m in decoder.feed(first[-1:] + second[:5])] == [b"one"]
    with pytest.raises(EventStreamError, match="ended 5 bytes into a message"):
        decoder.finish()


def test_every_header_type_is_read() -> None:
    moment = 1_700_000_000_000
    ident = uuid.uuid4()
    headers = (
        b"\x01t\x00"
        + b"\x01f\x01"
        + b"\x01b\x02\xff"
        + b"\x01s\x03"
        + struct.pack(">h", -2)
        + b"\x01i\x04"
        + struct.pack(">i", 70000)
        + b"\x01l\x05"
        + struct.pack(">q", 2**40)
        + b"\x01y\x06"
        + struct.pack(">H", 3)
        + b"\x00\x01\x02"
        + b"\x01d\x08"
        + struct.pack(">q", moment)
        + b"\x01u\x09"
        + ident.bytes
    )
    total = 16 + len(headers)
    prelude = struct.pack(">II", total, len(headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers
    message = head + struct.pack(">I", zlib.crc32(head))
    (decoded,) = EventStreamDecoder().feed(message)
    assert decoded.headers == {
        "t": True,
        "f": False,
        "b": -1,
        "s": -2,
        "i": 70000,
        "l": 2**40,
        "y": b"\x00\x01\x02",
        "d": moment,
        "u": ident,
    }
    assert decoded.payload == b""


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:5] + bytes([b[5] ^ 1]) + b[6:], "prelude CRC"),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), "message CRC"),
        (lambda b: b[:-6] + bytes([b[-6] ^ 1]) + b[-5:], "message CRC"),
    ],
)
def test_corrupt_bytes_are_refused(damage: object, message: str) -> None:
    data = encode_message({":event-type": "x"}, b"payload")
    with pytest.raises(EventStreamError, match=message):
        EventStreamDecoder().feed(damage(data))  # type: ignore[operator]


def test_an_impossible_length_is_refused_before_waiting_for_it() -> None:
    prelude = struct.pack(">II", 10, 0)
    with pytest.raises(EventStreamError, match="a message of 10 bytes"):
        EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))


# --------------------------------------------------------------------------
# SigV4


def signed_request(
    url: str, body: bytes, credentials: sigv4.Credentials, region: str, **headers: str
) -> RecordedRequest:
    signed = sigv4.sign_request(
        credentials,
        "POST",
        url,
        headers,
        body,
        region=region,
        service="bedrock",
        now=datetime.datetime(2026, 11, 30, 12, 0, 5, tzinfo=datetime.UTC),
    )
    path = url.split("//", 1)[1]
    path = path[path.index("/") :]
    return RecordedRequest("POST", path, signed, None, body)


@settings(max_examples=80, deadline=None)
@given(
    model=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-_:~", min_size=1, max_size=40),
    body=st.binary(max_size=300),
    query=st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["1", "x", ""])), max_size=3),
    token=st.none() | st.just("FQoGZXIvYXdzE-token"),
    spaced=st.text(alphabet="ab  \t", max_size=12),
)
def test_signatures_match_botocores(
    model: str, body: bytes, query: list[tuple[str, str]], token: str | None, spaced: str
) -> None:
    credentials = sigv4.Credentials(
        "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token
    )
    url = f"https://bedrock-runtime.eu-west-3.amazonaws.com:8443/model/{model}%2Fv1/converse"
    if query:
        url += "?" + "&".join(f"{k}={v}" for k, v in query)
    request = signed_request(
        url, body, credentials, "eu-west-3", **{"Content-Type": "application/json", "x-odd": spaced}
    )
    assert request.headers["host"] == "bedrock-runtime.eu-west-3.amazonaws.com:8443"
    assert signature_is_valid(request, credentials.secret_key, "eu-west-3")
    assert not signature_is_valid(request, "another-secret", "eu-west-3")


def test_the_aws_documentation_example_signature() -> None:
    """The signing-key derivation of the AWS documentation's worked example."""
    key = sigv4.signing_key(
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20120215", "us-east-1", "iam"
    )
    assert key.hex() == "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"


# --------------------------------------------------------------------------
# Credentials and region


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_PROFILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    return tmp_path


def test_the_environment_comes_before_the_files(
    aws_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (aws_env / "credentials").write_text(
        "[default]\naws_access_key_id = FILE\naws_secret_access_key = s\n"
    )
    assert sigv4.resolve_credentials() == sigv4.Credentials("FILE", "s", None)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENV")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "tok")
    assert sigv4.resolve_credentials() == sigv4.Credentials("ENV", "env-secret", "tok")
    assert "env-secret" not in repr(sigv4.resolve_credentials())


def test_a_profile_in_the_config_file_and_its_region(
    aws_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (aws_env / "config").write_text(
        "[default]\nregion = us-west-2\n\n[profile dev]\nregion = eu-north-1\n"
        "aws_access_key_id = DEV\naws_secret_access_key = dev-secret\n"
        "aws_session_token = dev-token\n"
    )
    assert sigv4.resolve_region() == "us-west-2"
    monkeypatch.setenv("AWS_PROFILE", "dev")
    assert sigv4.resolve_credentials() == sigv4.Credentials("DEV", "dev-secret", "dev-token")
    assert sigv4.resolve_region() == "eu-north-1"
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ca-central-1")
    assert sigv4.resolve_region() == "ca-central-1"
    monkeypatch.setenv("AWS_REGION", "sa-east-1")
    assert sigv4.resolve_region() == "sa-east-1"


def test_what_is_missing_is_named(aws_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(sigv4.CredentialsError, match=r"AWS_ACCESS_KEY_ID.*profile 'default'"):
        sigv4.resolve_credentials()
    with pytest.raises(sigv4.CredentialsError, match="no AWS region: set AWS_REGION"):
        sigv4.resolve_region()
    (aws_env / "config").write_text(
        "[profile sso]\nsso_session = corp\nregion = us-east-1\n"
        "[profile proc]\ncredential_process = /bin/get-creds\n"
    )
    monkeypatch.setenv("AWS_PROFILE", "sso")
    with pytest.raises(sigv4.CredentialsError, match="uses sso_session, which oma-host does not"):
        sigv4.resolve_credentials()
    monkeypatch.setenv("AWS_PROFILE", "proc")
    with pytest.raises(sigv4.CredentialsError, match="credential_process"):
        sigv4.resolve_credentials()
    (aws_env / "config").write_text("[broken\n")
    with pytest.raises(sigv4.CredentialsError, match="cannot be read"):
        sigv4.resolve_credentials()
