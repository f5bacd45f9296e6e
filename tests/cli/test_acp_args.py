"""``oma-host acp``'s command line (``oma_host.cli.acp_args``): each option
read into the door's options, the ones given before ``acp`` standing unless
given again, and usage errors said as argparse says them (status 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from oma_host.cli.acp_args import ACP_OPTIONS, help_text, parse_acp
from oma_host.wire.limits import DEFAULT_MAX_MESSAGE_BYTES


def test_every_option_reaches_the_doors_options() -> None:
    command = parse_acp(
        [
            "--agents",
            "a.json",
            "--state-dir=s",
            "--log-level",
            "DEBUG",
            "--max-message-bytes",
            "1024",
            "--session-idle-timeout",
            "2.5",
            "--telemetry-endpoint",
            "http://localhost:4318",
            "--telemetry-capture-content",
            "false",
            "--no-telemetry",
        ]
    )
    options = command.options
    assert (options.agents_file, options.state_dir, command.log_level) == ("a.json", "s", "DEBUG")
    assert (options.max_message_bytes, options.session_idle_timeout_s) == (1024, 2.5)
    assert options.telemetry_endpoint == "http://localhost:4318"
    assert options.telemetry_capture_content is False
    assert options.no_telemetry is True
    assert command.action is None


def test_defaults_and_the_options_given_before_acp() -> None:
    bare = parse_acp([])
    assert (bare.options.agents_file, bare.options.state_dir, bare.log_level) == (
        None,
        None,
        "WARNING",
    )
    assert bare.options.max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES
    assert bare.options.session_idle_timeout_s == 1800.0
    assert (bare.options.telemetry_capture_content, bare.options.no_telemetry) == (None, False)
    before = parse_acp([], state_dir="before", log_level="INFO", max_message_bytes=10)
    assert (before.options.state_dir, before.log_level) == ("before", "INFO")
    again = parse_acp(
        ["--state-dir", "after", "--log-level", "ERROR"],
        state_dir="before",
        log_level="INFO",
        max_message_bytes=10,
    )
    assert (again.options.state_dir, again.log_level) == ("after", "ERROR")
    assert again.options.max_message_bytes == 10


def test_an_option_by_a_prefix_of_its_own_and_the_actions() -> None:
    assert parse_acp(["--agent", "f"]).options.agents_file == "f"
    assert parse_acp(["login"]).action == "login"
    assert parse_acp(["--agents", "f", "logout"]).action == "logout"


@pytest.mark.parametrize(
    ("words", "error"),
    [
        (["--log-level", "LOUD"], "argument --log-level: invalid choice: 'LOUD'"),
        (["--max-message-bytes", "0"], "argument --max-message-bytes: wants a positive whole"),
        (["--session-idle-timeout=never"], "argument --session-idle-timeout: wants a positive"),
        (["--telemetry-endpoint", "ftp://x"], "argument --telemetry-endpoint: wants the"),
        (["--agents"], "argument --agents: expected one argument"),
        (["--agents", "--state-dir"], "argument --agents: expected one argument"),
        (["--tele", "x"], "ambiguous option: --tele could match"),
        (["--nosuch"], "unrecognized arguments: --nosuch"),
        (["--no-telemetry=yes"], "argument --no-telemetry: ignored explicit argument 'yes'"),
        (["serve"], "argument action: invalid choice: 'serve'"),
        (["login", "logout"], "unrecognized arguments: logout"),
    ],
)
def test_a_usage_error_says_what_and_exits_2(
    capsys: pytest.CaptureFixture[str], words: list[str], error: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        parse_acp(words)
    assert exited.value.code == 2
    stderr = capsys.readouterr().err
    assert stderr.startswith("usage: oma-host acp ")
    assert f"oma-host acp: error: {error}" in stderr


def test_the_help_shows_every_option() -> None:
    text = help_text()
    for option in ACP_OPTIONS:
        assert option.name in text
    assert text.startswith("usage: oma-host acp [-h] [--version]")


@pytest.mark.parametrize("before", [[], ["--log-level", "INFO", "--state-dir", ":memory:"]])
def test_the_command_reads_acp_with_or_without_options_before_it(before: list[str]) -> None:
    """``oma-host acp --help`` by the ACP parser alone; options before
    ``acp`` through the command's parser, the rest handed on."""
    done = subprocess.run(
        [sys.executable, "-m", "oma_host", *before, "acp", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: oma-host acp")
    listed = subprocess.run(
        [sys.executable, "-m", "oma_host", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "serve the agents as an ACP agent" in listed.stdout
