"""The one redaction module: what ``redacted`` takes out (docs/protocol.md,
"Online evaluation"), in every form it appears in, without breaking JSON,
twice the same as once, and as fast on a 20 MB image as on a line of text."""

from __future__ import annotations

import base64
import json
import random
import sys
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_host.core import redact
from oma_host.core.redact import REDACTED, Redactor, redact_patterns

GITHUB = "ghp_" + "a1B2" * 9
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # secret-looking names, in k=v, k: v and JSON forms
        ("password=hunter2 next", "password=[redacted] next"),
        ("passwd: s3cr3t; more", "passwd: [redacted]; more"),
        ("secret = abc", "secret = [redacted]"),
        ("https://x.test/cb?token=abc123&state=1", "https://x.test/cb?token=[redacted]&state=1"),
        ('{"password": "correct horse battery"}', '{"password": "[redacted]"}'),
        ("{'client_secret': 'xyz'}", "{'client_secret': '[redacted]'}"),
        ("GITHUB_TOKEN=abc DB_PASSWORD=def", "GITHUB_TOKEN=[redacted] DB_PASSWORD=[redacted]"),
        ('authToken: "t0k"', 'authToken: "[redacted]"'),
        ("api_key=abcdefgh1234", "api_key=[redacted]"),
        ("x-api-key: abcdefghij", "x-api-key: [redacted]"),
        ('{\\"password\\": \\"a b\\"}', '{\\"password\\": \\"[redacted]\\"}'),  # JSON in JSON
        # Authorization headers, whatever the scheme, and Bearer tokens anywhere
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted]"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNz", "Proxy-Authorization: Basic [redacted]"),
        ("authorization: opaque-credential", "authorization: [redacted]"),
        ("-H 'Bearer abcdefghijklmnopqrstuvwxyz'", "-H 'Bearer [redacted]'"),
        # literal token shapes
        ("key sk-ant-api03-abcdefghijklmnop", "key [redacted]"),
        ("sk-proj-ABCDEFGHIJKLMNOPQRST", "[redacted]"),
        (f"use {GITHUB} here", "use [redacted] here"),
        (f"{GITHUB.replace('ghp_', 'gho_')}", "[redacted]"),
        (f"{GITHUB.replace('ghp_', 'ghs_')}", "[redacted]"),
        (f"{GITHUB.replace('ghp_', 'ghu_')}", "[redacted]"),
        ("github_pat_11ABCDEFG0_abcdefghijklmnopqrstuv", "[redacted]"),
        ("id AKIAIOSFODNN7EXAMPLE.", "id [redacted]."),
        ("id ASIAIOSFODNN7EXAMPLE", "id [redacted]"),
        ("xoxb-1234567890-abcdefghij", "[redacted]"),
        ("xoxp-1234567890-abcdefghij", "[redacted]"),
        ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_nature-1", "jwt [redacted]"),
        (f"before\n{PEM}\nafter", f"before\n{REDACTED}\nafter"),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN cut short", REDACTED),  # no END line
    ],
)
def test_redacted_removes_each_credential_shape(text: str, expected: str) -> None:
    assert Redactor().redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 100, input_tokens=5",
        "Secretary: Bob",
        "task-abcdefghijklmnopqrstuvwxyz",
        "password=",
        'password=""',
        "the bearer of news",
        "AKIAIOSFODNN7EXAMPLEX",  # longer than a key id
        "plain text about passwords and tokens",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert Redactor().redact(text) == text


def test_a_redacted_json_document_stays_valid_json() -> None:
    document = json.dumps(
        {"password": "a b", "nested": {"api_key": "abcdefgh123", "note": f"token={GITHUB}"}}
    )
    assert json.loads(Redactor().redact(document)) == {
        "password": REDACTED,
        "nested": {"api_key": REDACTED, "note": f"token={REDACTED}"},
    }


def test_own_secrets_only_keeps_credential_shapes() -> None:
    # What storePayloads "full" uses: the agent's own key goes, the rest stays.
    keys_only = Redactor(["my-own-key-123"], patterns=False)
    assert keys_only.redact("my-own-key-123 password=x") == f"{REDACTED} password=x"


FRAGMENTS = st.sampled_from(
    [
        "password",
        "Token",
        "=",
        ": ",
        '"',
        "'",
        "\\",
        " ",
        "\n",
        "abc",
        "Authorization",
        "Basic ",
        "bearer ",
        "sk-",
        "gh",
        "p_",
        "AKIA",
        "xoxb-",
        "eyJ",
        ".",
        "-----BEGIN ",
        "PRIVATE KEY-----",
        "-----END ",
        "[redacted]",
        "0123456789abcdefghij",
        "İ",
        "é",
        "K",  # KELVIN SIGN: lowers to an ASCII k
        "secret",
        "api_key",
        "access-key",
        "private_key",
        "credentials",
        "passwd",
        "github_pat_",
        "ASIA",
        "\t",
        "-",
        "_",
        "xyz123",
    ]
)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_the_fast_path_equals_the_pattern_and_redacting_twice_changes_nothing(
    text: str,
) -> None:
    once = redact_patterns(text)
    assert once == redact._PATTERNS.sub(redact._replace, text)
    assert redact_patterns(once) == once


def test_a_20_mb_base64_image_comes_through_intact() -> None:
    data = base64.b64encode(random.Random(7).randbytes(15_000_000)).decode()
    started = time.monotonic()
    assert Redactor().redact(data) == data
    assert time.monotonic() - started < 30  # generous: only a hang fails it


@given(
    event=st.dictionaries(
        st.sampled_from(["type", "data", "secret-value", "x"]),
        st.one_of(
            st.text(alphabet=st.sampled_from("secrt-valu[]d x"), max_size=16),
            st.integers(),
            st.lists(st.text(alphabet="secrt-value", max_size=14), max_size=2),
        ),
        max_size=3,
    ),
    patterns=st.booleans(),
)
def test_redact_tree_of_an_event_is_a_copy_redacted_string_by_string(
    event: dict[str, object], patterns: bool
) -> None:
    """The shortcut for an object of strings holding no secret (a stream
    delta) gives what redacting every string gives, as a new object."""
    redactor = Redactor(["secret-value", "dact"], patterns=patterns)

    def by_hand(value: object) -> object:
        if isinstance(value, str):
            return redactor.redact(value)
        if isinstance(value, dict):
            return {key: by_hand(item) for key, item in value.items()}
        if isinstance(value, list):
            return [by_hand(item) for item in value]
        return value

    copied = redactor.redact_tree(event)
    assert copied == by_hand(event)
    assert list(copied) == list(event)  # the keys in their order
    assert copied is not event


_TREE = st.recursive(
    st.one_of(
        st.text(alphabet=st.sampled_from("secrt-valu[]d x"), max_size=16),
        st.integers(),
        st.none(),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(alphabet="secrt-value", max_size=14), children, max_size=3),
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_TREE, patterns=st.booleans())
def test_redact_owned_equals_redact_tree_and_keeps_a_clean_tree_as_is(
    tree: object, patterns: bool
) -> None:
    """A run's own result: the same object back when nothing in it is a
    secret (and patterns are off), else exactly what redact_tree gives."""
    redactor = Redactor(["secret-value", "dact"], patterns=patterns)
    expected = redactor.redact_tree(tree)
    owned = redactor.redact_owned(tree)
    assert owned == expected
    if not patterns and expected == tree:
        assert owned is tree


def test_redact_owned_finds_a_secret_deep_in_a_result() -> None:
    result = {
        "success": True,
        "messages": [{"role": "assistant", "content": [{"type": "text", "text": "k=sk-own"}]}],
        "tokenUsage": {"input_tokens": 1},
    }
    redacted = Redactor(["sk-own"], patterns=False).redact_owned(result)
    assert redacted is not result
    assert redacted["messages"][0]["content"][0]["text"] == f"k={REDACTED}"
    assert result["messages"][0]["content"][0]["text"] == "k=sk-own"  # the input is left alone


@pytest.mark.parametrize(
    "unit", ["gh", "eyJ", "token=\n", "Bearer ", "xox", "sk-", "-----BEGIN ", "İgh"]
)
def test_a_rule_s_beginning_repeated_costs_memory_of_one_copy_of_the_text(unit: str) -> None:
    """A text made of the start of a credential shape over and over (what
    an adversarial prompt sends) is redacted in memory for one lowered copy of
    it, not a record per place the shape could start."""
    text = unit * (2_000_000 // len(unit))
    tracemalloc.start()
    try:
        redacted = redact_patterns(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert redacted == redact._PATTERNS.sub(redact._replace, text)
    assert peak < 3 * sys.getsizeof(text)


@pytest.mark.parametrize(
    ("url", "found", "shown"),
    [
        ("https://gw.test/v1", (), "https://gw.test/v1"),
        (
            "http://me:p%40ss@gw.test:8080/v1",
            ("p%40ss", "p@ss"),
            "http://me:[redacted]@gw.test:8080/v1",
        ),
        ("https://gw.test/?key=abc&x=1", ("abc",), "https://gw.test/?key=[redacted]&x=1"),
        ("https://h.test/?sig=a%2Fb&sv=1", ("a%2Fb", "a/b"), "https://h.test/?sig=[redacted]&sv=1"),
        ("https://h.test/?api_key=", (), "https://h.test/?api_key="),
        ("not a url", (), "not a url"),
    ],
)
def test_a_urls_password_and_key_parameters_are_its_secrets(
    url: str, found: tuple[str, ...], shown: str
) -> None:
    assert redact.url_secrets(url) == found
    assert redact.redacted_url(url) == shown


def test_a_base_url_in_a_message_keeps_its_place_without_its_secrets() -> None:
    message = {"params": {"config": {"baseURL": "https://me:hunter22@gw.test/?token=t0k3n"}}}
    clean, found = redact.scrub_credentials(message)
    assert clean["params"]["config"]["baseURL"] == (
        "https://me:[redacted]@gw.test/?token=[redacted]"
    )
    assert {"hunter22", "t0k3n"} <= found
