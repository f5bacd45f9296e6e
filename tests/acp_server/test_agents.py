"""Which agents ``oma-host acp`` serves without ``--agents``, and how a bad
agents file is reported (tested on the loader; the command's exit status is
tested over stdio in test_door)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oma_host.acp_server.agents import AgentsFileError, load_agents


def test_without_a_file_one_agent_for_the_provider_key_that_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (config,) = load_agents(None)
    assert (config.name, config.provider) == ("openai", "openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    assert load_agents(None)[0].provider == "anthropic"


def test_the_user_agents_file_is_read_when_it_exists(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "oma-host").mkdir()
    agents = [
        {"name": "mine", "model": "m"},
        {"name": "cat", "backend": {"kind": "process", "command": "cat"}},
    ]
    (tmp_path / "oma-host" / "agents.json").write_text(json.dumps(agents))
    assert [config.name for config in load_agents(None)] == ["mine", "cat"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[{", "not valid JSON"),
        ("{}", "$ must be a non-empty array"),
        ("[]", "$ must be a non-empty array"),
        ('[{"name": "a", "model": "m"}, 3]', "$[1] must be an object"),
        ('[{"name": "a", "model": "m", "colour": "red"}]', "$[0].colour: is not a known field"),
        ('[{"name": "a", "model": "m", "tools": ["rm"]}]', "unknown tool 'rm'"),
        (
            '[{"name": "a", "model": "m", "tools": ["file_reed"]}]',
            "$[0].tools[0]: unknown tool 'file_reed'; did you mean file_read?",
        ),
        (
            '[{"name": "a", "model": "m", "disallowedTools": ["glob", "shel"]}]',
            "$[0].disallowedTools[1]: unknown tool 'shel'; did you mean shell?",
        ),
        (
            '[{"name": "a", "model": "m", "toolPreset": "read-only"}]',
            '$[0].toolPreset must be one of "readonly", "readwrite", "full"; '
            "'read-only' is not one; did you mean readonly?",
        ),
        (
            '[{"name": "a", "model": "m"}, {"name": "a", "model": "m"}]',
            "$[1].name: 'a' is used twice",
        ),
        ('[{"name": "a", "model": "m", "hooks": {"beforeRun": true}}]', "$[0].hooks: hooks need"),
    ],
)
def test_a_bad_file_names_itself_and_the_json_path(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "agents.json"
    path.write_text(content)
    with pytest.raises(AgentsFileError) as caught:
        load_agents(str(path))
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)


def test_the_user_agents_file_is_read_only_from_a_folder_of_the_users_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A config folder linked to one anyone may write: its agents file is
    not read (the door refuses sessions saying why); one of the user's own
    that others could enter is tightened to 0700 and read."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    (shared / "agents.json").write_text('[{"name": "planted", "model": "m"}]')
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "oma-host").symlink_to(shared)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "linked"))
    with pytest.raises(AgentsFileError) as refused:
        load_agents(None)
    assert "is a symbolic link" in str(refused.value)
    own = tmp_path / "own" / "oma-host"
    own.mkdir(parents=True, mode=0o755)
    own.chmod(0o755)
    (own / "agents.json").write_text('[{"name": "mine", "model": "m"}]')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "own"))
    assert [config.name for config in load_agents(None)] == ["mine"]
    assert own.stat().st_mode & 0o777 == 0o700
