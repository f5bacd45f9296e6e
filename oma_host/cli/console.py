"""``oma-host console``: an interactive console for a person at a terminal.

The main thread runs the input loop, so readline's editing and history and
Ctrl-C behave as at any shell prompt; an asyncio loop in a second thread owns
the client, so commands can be typed while a reply streams, and output is
written above the prompt. Ctrl-C cancels the runs in flight, never the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from oma_host.cli.client import host_argv
from oma_host.cli.console_commands import COMMANDS, Console
from oma_host.core.places import private_folder
from oma_host.core.redact import redact_patterns

PROMPT = "oma> "
_NAME_COMMANDS = {"run", "stream", "prompt", "image", "history", "reset"}


class Screen:
    """Output shared by both threads; keeps the prompt (and what is typed) below it."""

    def __init__(self, interactive: bool) -> None:
        self.interactive = interactive
        self.readline: ModuleType | None = None  # set once readline is loaded
        self._lock = threading.Lock()
        self._reading = False  # the main thread is inside input()
        self._prompt_shown = False
        self._mid_line = False  # the last output did not end with a newline
        self._statuses: dict[str, str] = {}  # run key -> what it is doing now
        self._status_drawn = False  # a status line stands above the prompt
        self._frames = itertools.cycle("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
        self._frame = next(self._frames)

    def _write(self, text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def before_input(self) -> None:
        with self._lock:
            if self._mid_line:
                self._write("\n")
                self._mid_line = False
            self._draw_status()  # input() writes the prompt below it
            self._reading = self._prompt_shown = True

    def after_input(self) -> None:
        with self._lock:
            if self._status_drawn:  # take it out from above the line just entered
                self._write("\x1b[2A\r\x1b[M\x1b[1B")
                self._status_drawn = False
            self._reading = self._prompt_shown = False

    def status(self, key: str, text: str | None) -> None:
        """Set (or, with None, end) what the run ``key`` is doing now."""
        with self._lock:
            if text is None and key not in self._statuses:
                return
            self._hide_prompt()
            if text is None:
                del self._statuses[key]
            else:
                self._statuses[key] = text
                self._frame = next(self._frames)
            self._show_prompt()

    def _draw_status(self) -> None:
        if self.interactive and self._statuses and not self._mid_line:
            self._write(f"{self._frame} {' · '.join(self._statuses.values())}\n")
            self._status_drawn = True

    def _hide_prompt(self) -> None:
        if self.interactive and self._reading and self._prompt_shown:
            self._write("\r\x1b[K")
            if self._status_drawn:
                self._write("\x1b[1A\r\x1b[K")
                self._status_drawn = False
            self._prompt_shown = False

    def _show_prompt(self) -> None:
        if self.interactive and self._reading and not self._prompt_shown:
            typed = self.readline.get_line_buffer() if self.readline else ""
            self._draw_status()
            self._write(PROMPT + typed)
            self._prompt_shown = True

    def stream(self, text: str) -> None:
        """A piece of a streamed reply, written as it comes."""
        if not text:
            return
        with self._lock:
            self._hide_prompt()
            self._write(text)
            self._mid_line = not text.endswith("\n")
            if not self._mid_line:
                self._show_prompt()

    def line(self, text: str) -> None:
        """A whole line (a result, an error, a notice)."""
        with self._lock:
            self._hide_prompt()
            if self._mid_line:
                self._write("\n")
            self._write(text + "\n")
            self._mid_line = False
            self._show_prompt()


def _history_file() -> Path | None:
    """``$XDG_STATE_HOME/oma-host/console_history`` (``~/.local/state`` by default)."""
    state = os.environ.get("XDG_STATE_HOME")
    try:
        base = Path(state) if state else Path.home() / ".local" / "state"
    except (RuntimeError, KeyError):  # no home directory to be found
        return None
    return base / "oma-host" / "console_history"


def _setup_readline(console: Console) -> ModuleType | None:
    try:
        import readline
    except ImportError:  # a Python built without it: plain input() still works
        return None
    history = _history_file()
    if history is not None:
        with contextlib.suppress(OSError):
            readline.read_history_file(history)
    readline.set_history_length(1000)

    def complete(text: str, state: int) -> str | None:
        words = readline.get_line_buffer()[: readline.get_begidx()].split()
        if not words:
            options: list[str] = list(COMMANDS)
        elif len(words) == 1 and words[0] in _NAME_COMMANDS:
            options = list(console.agents)
        else:
            options = []
        matches = [option + " " for option in options if option.startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.set_completer(complete)
    if "libedit" in (readline.__doc__ or ""):
        readline.parse_and_bind("bind ^I rl_complete")
    else:
        readline.parse_and_bind("tab: complete")
    return readline


def _save_history(readline: ModuleType | None) -> None:
    """Write the line history, with credentials taken out: a key typed into a
    ``create`` line stays usable (arrow up) for the session, never on disk."""
    history = _history_file()
    if readline is None or history is None:
        return
    for position in range(readline.get_current_history_length()):
        line = readline.get_history_item(position + 1)  # items count from 1, replacing from 0
        if isinstance(line, str) and (redacted := redact_patterns(line)) != line:
            readline.replace_history_item(position, redacted)
    with contextlib.suppress(OSError):  # an unwritable home must not spoil the exit
        private_folder(str(history.parent), create=True)  # the state directory's rule
        readline.write_history_file(history)


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5)
    if not thread.is_alive():
        loop.close()


def run_console(host_command: Sequence[str] | None = None) -> int:
    """Run the console until quit or end of input; returns the exit code."""
    interactive = sys.stdin.isatty()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="oma-console", daemon=True)
    thread.start()
    screen = Screen(interactive)
    console = Console(screen)

    def call(coroutine: Any, timeout: float | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with contextlib.suppress(TimeoutError):
                # Short waits keep the main thread responsive to Ctrl-C.
                return future.result(timeout=0.1)
            if deadline is not None and time.monotonic() > deadline:
                future.cancel()
                raise TimeoutError

    try:
        version = call(console.start(list(host_command or host_argv())), timeout=60)
    except (Exception, KeyboardInterrupt) as error:
        print(f"could not start the host: {error or type(error).__name__}", file=sys.stderr)
        with contextlib.suppress(Exception, KeyboardInterrupt):
            call(console.stop(), timeout=30)
        _stop_loop(loop, thread)
        return 1
    readline = screen.readline = _setup_readline(console) if interactive else None

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(console.cancel_all)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_interrupt)
    if interactive:
        screen.line(f"{version} console: type help for commands, Ctrl-D or quit to leave")
    try:
        while not console.host_gone:
            try:
                screen.before_input()
                try:
                    line = input(PROMPT if interactive else "").strip()
                finally:
                    screen.after_input()
                if line in ("quit", "exit"):
                    break
                if line:
                    try:
                        call(console.execute(line, background=interactive))
                    except Exception as error:  # a surprise from the host must not end it
                        screen.line(f"error: {error}")
            except KeyboardInterrupt:
                # Already turned into $/cancelRequest by on_interrupt; just a fresh prompt.
                if interactive:
                    screen.line("")
            except EOFError:
                if interactive:
                    screen.line("")
                break
        try:
            code = call(console.stop(), timeout=30)
        except (KeyboardInterrupt, TimeoutError):
            code = 1
            if console.client is not None:
                with contextlib.suppress(ProcessLookupError):
                    console.client.host_process.kill()
    finally:
        signal.signal(signal.SIGINT, previous)
        _save_history(readline)
        _stop_loop(loop, thread)
    if code != 0:
        print(f"the host exited with code {code}", file=sys.stderr)
        return 1
    return 0
