"""The VS Code extension in a real VS Code: code-server 4.139.1 (VS Code
1.139.1) in Debian's chromium, driven through the DOM by Playwright.

The built extension is installed into a fresh extensions dir, its settings
point ``oma.host.command`` at the installed ``oma-host`` and its agents at the
provider simulator (run in this process, so each test scripts its replies)
and at a process agent (``tr a-z A-Z``). Checked as a person would see it: a
command runs and its reply appears in the Chat view; ``@oma`` questions
stream; a conversation is one agent's history and ``/reset`` clears it; an
image sent to a process agent shows the host's InvalidMessageError; stopping
a slow reply cancels the run; the status bar and the output channel show the
host's state; "OMA: Choose model" offers the provider's models (a refused
list is the host's error) and the conversation goes on with the chosen one.
A failed check leaves a screenshot in tests/editors/artifacts/.

code-server, chromium and Playwright come from ``.ci/install-code-server``
and the dev extra; without them these tests skip, except under CI, where
they fail.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from oma_host.core.version import __version__
from oma_host.testing.simulator import Fault, Reply, Simulator
from tests.editors.code_server_harness import (
    UI_TIMEOUT_MS,
    Workbench,
    code_server,
    find_install,
    oma_host_command,
    text_of,
)
from tests.editors.helpers import ROOT
from tests.headless_chromium import CHROMIUM

pytestmark = pytest.mark.timeout(300)

PNG = ROOT / "tests" / "editors" / "fixtures" / "red-square.png"


# Why the workbench did not start, once it has failed to.
STARTUP_FAILURE: list[str] = []


def extension_host_log(root: Path) -> str:
    """What code-server's extension host logged about our extension (activation errors)."""
    logs = sorted((root / "user-data" / "logs").glob("*/exthost*/remoteexthost.log"))
    if not logs:
        return "(no extension host log)"
    ours = [line for line in logs[-1].read_text().splitlines() if "oma-host" in line]
    return "\n".join(line[:400] for line in ours[-20:]) or "(nothing about oma-host)"


@pytest.fixture(scope="module")
def simulator() -> Iterator[Simulator]:
    with Simulator() as sim:
        yield sim


@pytest.fixture(scope="module")
def workbench(
    simulator: Simulator, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workbench]:
    if STARTUP_FAILURE:  # one failed start fails the others at once
        pytest.fail(f"the workbench did not start: {STARTUP_FAILURE[0]}")
    install = find_install()
    from playwright.sync_api import sync_playwright

    root = tmp_path_factory.mktemp("code-server")
    settings: dict[str, Any] = {
        "oma.host.command": oma_host_command(),
        "oma.stateDir": str(root / "oma-state"),
        "oma.agents": [
            {
                "name": "sim",
                "provider": "anthropic",
                "model": "sim-small",
                "baseURL": simulator.base_url,
                "apiKeyEnv": "OMA_SIM_KEY",
            },
            {
                "name": "shout",
                "backend": {"kind": "process", "command": "tr", "args": ["a-z", "A-Z"]},
            },
            {
                "name": "writer",
                "provider": "anthropic",
                "model": "sim-small",
                "baseURL": simulator.base_url,
                "apiKeyEnv": "OMA_SIM_KEY",
                "tools": ["file_write"],
                "cwd": str(root / "workspace"),
                "permissions": [{"tool": "file_write", "action": "ask"}],
            },
        ],
        "oma.defaultAgent": "sim",
        "workbench.startupEditor": "none",
    }
    with code_server(install, root, settings, {"OMA_SIM_KEY": "sim-key"}) as url:
        shutil.copy(PNG, root / "workspace" / PNG.name)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
            )
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(UI_TIMEOUT_MS)
            page.goto(url)
            bench = Workbench(page, root / "workspace")
            try:
                with step(bench, "startup"):
                    bench.wait_ready()
                    # The extension activates on startup and shows its status item.
                    bench.wait_for(
                        lambda: "oma" in bench.status_bar_text(), "the oma status bar item"
                    )
            except AssertionError as error:
                why = f"{error}; the extension host's log says:\n{extension_host_log(root)}"
                STARTUP_FAILURE.append(why)
                pytest.fail(why)
            yield bench
            browser.close()


@contextmanager
def step(bench: Workbench, name: str) -> Iterator[None]:
    """A check whose failure leaves a screenshot of the workbench."""
    try:
        yield
    except BaseException:
        shot = bench.screenshot(f"code-server-{name}")
        print(f"screenshot of the failed step: {shot}")
        raise


def test_a_command_runs_and_its_reply_appears_in_the_chat(
    workbench: Workbench, simulator: Simulator
) -> None:
    with step(workbench, "command"):
        workbench.run_command("OMA: Ask agent")
        workbench.answer_input("what is two plus two")
        expected = "the last user message holds: text 'what is two plus two'"
        workbench.wait_for(lambda: expected in workbench.last_response_text(), "the reply")
        assert simulator.requests[-1].headers.get("x-api-key") == "sim-key"


def test_a_chat_question_streams_its_answer(workbench: Workbench, simulator: Simulator) -> None:
    words = [f"word{n:02d}" for n in range(12)]
    simulator.script(Reply.text(" ".join(words), chunk_size=7, event_delay_s=0.4))
    with step(workbench, "stream"):
        workbench.send_chat("@oma /ask stream please")
        # Part of the reply is shown while the rest is still on its way.
        workbench.wait_for(
            lambda: (
                words[1] in workbench.last_response_text()
                and words[-1] not in workbench.last_response_text()
            ),
            "a partly streamed reply",
        )
        workbench.wait_for(lambda: words[-1] in workbench.last_response_text(), "the whole reply")
        # Shown, not folded away into the reply's collapsed progress steps.
        markdown = workbench.page.locator(".interactive-response .rendered-markdown")
        assert markdown.filter(has_text=words[-1]).last.is_visible()


def test_a_chat_conversation_is_one_agents_history_and_reset_clears_it(
    workbench: Workbench,
) -> None:
    with step(workbench, "conversation"):
        workbench.send_chat("@oma first turn")
        workbench.wait_for(
            lambda: "saw 1 message(s)" in workbench.last_response_text(), "the first turn"
        )
        workbench.send_chat("@oma second turn")
        # agent/prompt on one agent: the provider saw the whole conversation.
        workbench.wait_for(
            lambda: (
                "saw 3 message(s)" in workbench.last_response_text()
                and "second turn" in workbench.last_response_text()
            ),
            "the second turn",
        )
        workbench.send_chat("@oma /reset")
        workbench.wait_for(
            lambda: "sim's conversation was reset" in workbench.last_response_text(), "the reset"
        )
        workbench.send_chat("@oma after the reset")
        workbench.wait_for(
            lambda: (
                "saw 1 message(s)" in workbench.last_response_text()
                and "after the reset" in workbench.last_response_text()
            ),
            "a turn after the reset",
        )


def test_an_image_for_a_process_agent_shows_the_hosts_invalid_message_error(
    workbench: Workbench,
) -> None:
    with step(workbench, "image"):
        workbench.open_from_explorer(PNG.name)
        workbench.run_command("OMA: Open chat")
        workbench.send_chat("@oma /agent shout")
        workbench.wait_for(
            lambda: (
                "asks `shout`" in workbench.last_response_text()
                or "asks shout" in workbench.last_response_text()
            ),
            "the agent switch",
        )
        workbench.send_chat("@oma /ask what is in this picture")
        workbench.wait_for(
            lambda: "InvalidMessageError" in workbench.last_response_text(), "the host's error"
        )
        shown = workbench.last_response_text()
        assert "error -32602 InvalidMessageError at input" in shown, shown
        workbench.run_command("View: Close All Editors")
        workbench.send_chat("@oma /agent sim")
        workbench.wait_for(lambda: "sim" in workbench.last_response_text(), "the switch back")


def test_stopping_a_slow_reply_cancels_the_run(workbench: Workbench, simulator: Simulator) -> None:
    words = [f"slow{n:02d}" for n in range(40)]
    simulator.script(Reply.text(" ".join(words), chunk_size=7, event_delay_s=0.5))
    with step(workbench, "cancel"):
        workbench.send_chat("@oma /ask a slow one")
        workbench.wait_for(lambda: words[1] in workbench.last_response_text(), "the first words")
        # While it runs, the status bar counts it.
        assert "oma: 1 running" in workbench.status_bar_text()
        workbench.stop_chat()
        # The run ends ($/cancelRequest answered -32800): nothing is in flight,
        # long before the reply would have finished on its own.
        workbench.wait_for(
            lambda: "oma: ready" in workbench.status_bar_text(), "the run to end", timeout_s=10
        )
        shown = workbench.last_response_text()
        time.sleep(2)
        assert words[-1] not in workbench.last_response_text(), shown


def test_a_tool_call_asks_in_a_modal_and_its_edit_is_applied_by_vscode(
    workbench: Workbench, simulator: Simulator
) -> None:
    workspace = workbench.workspace
    text = "written by the agent through VS Code\n"
    write = {"type": "tool_use", "id": "w1", "name": "file_write"}
    simulator.script(
        Reply(content=[{**write, "input": {"path": "notes.txt", "content": text}}]),
        Reply.text("I wrote notes.txt."),
    )
    with step(workbench, "permission"):
        workbench.run_command("OMA: Open chat")
        workbench.send_chat("@oma /agent writer")
        workbench.wait_for(lambda: "writer" in workbench.last_response_text(), "the switch")
        workbench.send_chat("@oma /ask write the notes")
        dialog = workbench.page.locator(".monaco-dialog-box")
        dialog.wait_for()
        shown = str(dialog.inner_text())
        assert 'Agent "writer" asks permission' in shown, shown
        assert "notes.txt" in shown, shown
        buttons = [str(b) for b in dialog.locator(".monaco-button").all_inner_texts()]
        # VS Code orders a modal's buttons by platform and adds its own Cancel.
        assert {"Allow once", "Always this session", "Deny"} <= set(buttons), buttons
        dialog.get_by_role("button", name="Allow once").click()
        workbench.wait_for(
            lambda: "I wrote notes.txt." in workbench.last_response_text(), "the agent's reply"
        )
        # workspace/applyEdit went through VS Code's WorkspaceEdit, which saved the file.
        workbench.wait_for(lambda: (workspace / "notes.txt").exists(), "notes.txt on disk")
        workbench.wait_for(
            lambda: (workspace / "notes.txt").read_text() == text, "the edit saved to disk"
        )
        workbench.open_from_explorer("notes.txt")
        editor = workbench.page.locator(".editor-instance .view-lines").first
        workbench.wait_for(lambda: "written by the agent" in text_of(editor), "the edit")
        workbench.run_command("View: Close All Editors")
        workbench.send_chat("@oma /agent sim")
        workbench.wait_for(lambda: "sim" in workbench.last_response_text(), "the switch back")


def test_the_status_bar_and_the_output_channel_show_the_hosts_state(workbench: Workbench) -> None:
    with step(workbench, "status"):
        workbench.run_command("OMA: Open chat")
        workbench.send_chat("@oma /ask are you there")
        workbench.wait_for(lambda: "are you there" in workbench.last_response_text(), "a reply")
        workbench.wait_for(lambda: "oma: ready" in workbench.status_bar_text(), "oma: ready")
        workbench.run_command("OMA: Show host output")
        output = workbench.page.locator("#workbench\\.parts\\.panel .view-lines").first
        workbench.wait_for(lambda: "is ready" in text_of(output), "the host's state in the output")
        text = text_of(output)
        assert "starting " in text and f"oma-host {__version__} is ready" in text, text


def test_choose_model_lists_the_providers_models_and_the_conversation_goes_on(
    workbench: Workbench, simulator: Simulator
) -> None:
    page = workbench.page
    rows = page.locator(".quick-input-widget:visible .quick-input-list .monaco-list-row")
    with step(workbench, "models"):
        workbench.run_command("OMA: Open chat")
        workbench.send_chat("@oma /agent sim")
        workbench.wait_for(lambda: "sim" in workbench.last_response_text(), "the switch")
        # The provider refuses the list: the host's message, as a notification.
        simulator.script(Fault(401, "invalid x-api-key"))
        workbench.run_command("OMA: Choose model")
        # The error is a notification (a toast, or only in the notification center).
        workbench.run_command("Notifications: Show Notifications")
        center = page.locator(".notifications-center")
        workbench.wait_for(lambda: "invalid x-api-key" in text_of(center), "the host's error")
        shown = text_of(center)
        assert "oma: anthropic: invalid x-api-key" in shown, shown
        assert "sim-key" not in shown, shown
        workbench.run_command("Notifications: Clear All Notifications")

        # Turns sent by "OMA: Chat with agent" (the chat input, typed into
        # after a QuickPick, sometimes takes a completion instead).
        workbench.run_command("OMA: Chat with agent")
        workbench.answer_input("before the switch")
        workbench.wait_for(lambda: "before the switch" in workbench.last_response_text(), "a turn")
        before = workbench.last_response_text()
        seen = int(before.split("simulator saw ")[1].split(" ")[0])
        # A failed list is not kept: asked again, the provider's list is offered.
        workbench.run_command("OMA: Choose model")
        rows.filter(has_text="sim-large").first.wait_for()
        offered = [str(text) for text in rows.all_inner_texts()]
        # Each row: the model id, then its description (the current one says so).
        assert len(offered) == 2, offered
        assert offered[0].startswith("sim-small") and "current" in offered[0], offered
        assert offered[1].startswith("sim-large") and "current" not in offered[1], offered
        rows.filter(has_text="sim-large").first.click()
        workbench.wait_for(
            lambda: "sim uses sim-large" in workbench.status_bar_text(), "the switch said"
        )

        workbench.run_command("OMA: Chat with agent")
        workbench.answer_input("after the switch")
        workbench.wait_for(
            lambda: "after the switch" in workbench.last_response_text(), "a turn on sim-large"
        )
        # The new agent has the old one's conversation, and asks with the new model.
        after = workbench.last_response_text()
        assert f"simulator saw {seen + 2} message(s)" in after, after
        assert simulator.requests[-1].body["model"] == "sim-large"
