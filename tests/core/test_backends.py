"""The core knows backends through the registry only (core/plugins.py):
capability flags, the config check, secrets worked out once per config."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from oma_host.core import plugins
from oma_host.core.backends import BackendEntry
from oma_host.core.config import BackendConfig, parse_agent_config
from oma_host.core.errors import InvalidMessageError, InvalidParamsError
from oma_host.core.plugins import backend_entry, check_agent_config
from oma_host.core.provider_facts import PROVIDERS
from oma_host.core.redact import config_secrets

ROOT = Path(__file__).resolve().parents[2]
PROCESS = {"name": "p", "backend": {"kind": "process", "command": "cat"}}
ACP = {"name": "a", "backend": {"kind": "acp", "command": "agent"}}
LLM = {"name": "l", "provider": "test", "model": "echo"}


@pytest.mark.parametrize(
    ("raw", "kind", "structured", "session"),
    [(LLM, "llm", True, True), (PROCESS, "process", False, False), (ACP, "acp", False, True)],
)
def test_each_kind_declares_what_it_accepts_and_keeps(
    raw: dict[str, object], kind: str, structured: bool, session: bool
) -> None:
    entry = backend_entry(parse_agent_config(raw))
    assert (entry.kind, entry.accepts_structured, entry.keeps_session) == (
        kind,
        structured,
        session,
    )


@pytest.mark.parametrize(
    ("raw", "named"),
    [(PROCESS, "has a process backend, which"), (ACP, "has an ACP backend, which")],
)
def test_the_string_only_refusal_names_the_backend_in_english(
    raw: dict[str, object], named: str
) -> None:
    from oma_host import Agent

    with pytest.raises(InvalidMessageError) as caught:
        Agent(raw).run([{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    assert named in str(caught.value)


def test_the_string_only_boundary_imports_no_bridge() -> None:
    """Structured input to an ACP agent is refused from the flags alone: the
    bridge modules and the acp library stay unimported."""
    script = textwrap.dedent(
        """
        import sys
        from oma_host import Agent, InvalidMessageError
        agent = Agent({"name": "a", "backend": {"kind": "acp", "command": "agent"}})
        try:
            agent.stream([{"role": "user", "content": [{"type": "text", "text": "x"}]}])
        except InvalidMessageError as error:
            assert "accepts string prompts only" in str(error), error
        else:
            raise SystemExit("not refused")
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("acp", "pexpect"))
        plugins = ("oma_host.bridges.", "oma_host.llm.")
        loaded += sorted(m for m in sys.modules if m.startswith(plugins))
        assert not loaded, loaded
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("extra", "error", "text"),
    [
        ({"provider": "nope"}, InvalidParamsError, "provider 'nope' is not available"),
        ({"tools": ["no_such_tool"]}, InvalidParamsError, "no_such_tool"),
        ({"outputSchema": {"type": 12}}, InvalidParamsError, "not a valid JSON Schema"),
        ({"history": [{"role": "robot", "content": []}]}, InvalidMessageError, "config.history"),
    ],
)
def test_a_config_is_checked_without_an_agent(
    extra: dict[str, object], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text.replace("(", r"\(")):
        check_agent_config(parse_agent_config({**LLM, **extra}))


def test_the_history_check_returns_the_agents_private_copy() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    copied = check_agent_config(parse_agent_config({**LLM, "history": history}))
    assert copied == history and copied[0] is not history[0]


def test_secrets_are_worked_out_once_per_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_TOKEN", "token-value-1")
    config = parse_agent_config(PROCESS)
    assert "token-value-1" in config_secrets(config)
    monkeypatch.setenv("SERVICE_TOKEN", "token-value-2")
    assert config_secrets(config) is config.secrets  # not recomputed
    assert "token-value-1" in config.secrets
    # A copy with other fields is a new config: its secrets are its own.
    copied = config.model_copy(update={"api_key": "the-copy-key"})
    assert "the-copy-key" in copied.secrets and "token-value-2" in copied.secrets
    assert "the-copy-key" not in config.secrets


def test_the_registry_names_every_kind_a_config_can_name() -> None:
    external = {
        kind
        for model in get_args(get_args(BackendConfig)[0])
        for kind in get_args(model.model_fields["kind"].annotation)
    }
    assert set(plugins.BACKENDS) == external | {"llm"}
    for kind, reference in plugins.BACKENDS.items():
        entry = plugins.load(reference)
        assert isinstance(entry, BackendEntry) and entry.kind == kind, reference


def test_the_registry_names_an_adapter_and_each_model_list_a_lister() -> None:
    from oma_host.providers.model_list import LISTERS

    assert set(plugins.ADAPTERS) == {facts.name for facts in PROVIDERS}
    assert all(callable(plugins.adapter_factory(name)) for name in plugins.ADAPTERS)
    assert set(LISTERS) == {facts.name for facts in PROVIDERS if facts.model_list is not None}


def test_a_kind_missing_from_the_registry_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(plugins.BACKENDS, "acp")
    with pytest.raises(InvalidParamsError, match="backend kind 'acp' is not available"):
        backend_entry(parse_agent_config(ACP))


def test_the_registry_imports_nothing_until_asked() -> None:
    """Importing it (as the provider registry does on a first adapter) loads
    no plugin, nor pydantic."""
    script = (
        "import sys, oma_host.core.plugins\n"
        "print(*sorted(m for m in sys.modules if m.startswith(('oma_host', 'pydantic'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(done.stdout.split())
    assert loaded <= {
        "oma_host",
        "oma_host.core",
        "oma_host.core.errors",
        "oma_host.core.plugins",
        "oma_host.core.version",
    }, loaded
