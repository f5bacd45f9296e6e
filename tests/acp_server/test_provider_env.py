"""The ACP door as a user meets it from an editor's agent list: no agents
file, a key and ``ANTHROPIC_BASE_URL`` in the environment (a gateway, here
the provider simulator), as Anthropic's own SDK and CLI read them. The
default agent's requests go to that endpoint, on its provider's default
model, with the key."""

from __future__ import annotations

import sys

from oma_host.core.provider_facts import facts_of
from oma_host.testing.simulator import Reply
from tests.acp_server.helpers import Door, initialize, new_session, prompt, reply_text, text


class NoAgentsFileDoor(Door):
    """``oma-host acp`` as an editor's registry entry starts it: no
    ``--agents``, and no user agents file (an empty ``XDG_CONFIG_HOME``)."""

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "oma_host", "acp", "--state-dir", str(self.state)]


def test_the_default_agent_reaches_the_endpoint_anthropic_base_url_names(door: Door) -> None:
    (door.tmp / "bare").mkdir()
    bare = NoAgentsFileDoor(door.client_dir, door.sim, door.tmp / "bare")
    config_home = door.tmp / "empty-config"
    config_home.mkdir()
    bare.env = {
        **door.env,
        "XDG_CONFIG_HOME": str(config_home),
        "ANTHROPIC_API_KEY": "sk-ant-env-key-0123456789abcdef",
        "ANTHROPIC_BASE_URL": door.sim.base_url,
    }
    door.sim.script(Reply.text("hello from the gateway"))
    _, new, turn = bare.run(initialize(), new_session(bare.cwd), prompt(text("hi")))
    assert new["result"]["sessionId"]
    assert turn["result"]["stopReason"] == "end_turn"
    assert reply_text(turn["updates"]) == "hello from the gateway"
    posts = [request for request in door.sim.requests if request.method == "POST"]
    assert [request.path for request in posts] == ["/v1/messages"]
    assert posts[0].body["model"] == facts_of("anthropic").default_model
    assert posts[0].headers["x-api-key"] == "sk-ant-env-key-0123456789abcdef"
