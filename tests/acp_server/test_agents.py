"""Which agents ``oma-host acp`` serves without ``--agents``, and how a bad
agents file is reported (tested on the loader; the command's exit status is
tested over stdio in test_door)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oma_host.acp_server.agents import AgentsFileError, load_agents, parse_agents_file


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
            "config.tools[0]: unknown tool 'file_reed'; did you mean file_read?",
        ),
        (
            '[{"name": "a", "model": "m", "disallowedTools": ["glob", "shel"]}]',
            "config.disallowedTools[1]: unknown tool 'shel'; did you mean shell?",
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
        parse_agents_file(str(path))
    assert str(caught.value).startswith(f"{path}: ")
    assert expected in str(caught.value)
