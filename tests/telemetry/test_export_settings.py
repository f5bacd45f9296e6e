"""How the JSON-RPC door's export is turned on, what it carries with
content capture on, and what it costs when it is off or cannot send: a real
``oma-host`` against the provider simulator, and a receiver decoding the
OTLP/HTTP requests with ``opentelemetry-proto``."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oma_host.cli.client import HostClient, host_argv
from oma_host.testing.script import Reply
from oma_host.testing.simulator import Simulator
from tests.builders import reply, tool_use
from tests.cli.recorded_runs import show_json
from tests.providers.helpers import llm_config
from tests.telemetry.receiver import Receiver, by_operation

KEY = "sk-ant-api03-otel-settings-key-DO-NOT-LEAK-77"
# Redacted by the credential patterns wherever it appears in content.
LEAKED = "sk-ant-api03-LEAKED-IN-A-PROMPT-0123456789abcdef"
PROMPT = f"PROMPT-MARKER-2b read the notes; my key is {LEAKED}"
FILE_TEXT = "FILE-CONTENT-MARKER-55\n"
TOKEN = "Bearer collector-token-SECRET-4d1"


@pytest.fixture
def collector() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


async def one_tool_run(host: HostClient, sim: Simulator, work: Path) -> str:
    """A run that reads a file, then answers."""
    (work / "notes.txt").write_text(FILE_TEXT)
    config = llm_config(sim, "anthropic", name="reader", tools=["file_read"], cwd=str(work))
    agent = (await host.request("agent/create", {"config": config}))["agentId"]
    call = tool_use("c1", "file_read", path="notes.txt")
    sim.script(reply(call), Reply.text("ANSWER-MARKER-3e done"))
    result = await host.request("agent/run", {"agentId": agent, "input": PROMPT})
    assert result["success"], result
    run_id: str = result["identity"]["runId"]
    return run_id


async def test_content_capture_exports_the_text_redacted(
    sim: Simulator, collector: Receiver, tmp_path: Path
) -> None:
    env = {
        "ANTHROPIC_API_KEY": KEY,
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }
    host = await HostClient.spawn(env=env)
    await host.initialize()
    await one_tool_run(host, sim, tmp_path)
    assert await host.close() == 0
    spans = collector.spans
    raw = collector.raw
    for marker in ("PROMPT-MARKER-2b", "FILE-CONTENT-MARKER-55", "ANSWER-MARKER-3e"):
        assert marker.encode() in raw, marker
    assert LEAKED.encode() not in raw and KEY.encode() not in raw
    (root,) = by_operation(spans, "invoke_agent")
    assert "PROMPT-MARKER-2b" in root.attributes["gen_ai.input.messages"]
    assert "[redacted" in root.attributes["gen_ai.input.messages"]
    assert "ANSWER-MARKER-3e" in root.attributes["gen_ai.output.messages"]
    (tool,) = by_operation(spans, "execute_tool")
    assert tool.attributes["gen_ai.tool.call.arguments"] == '{"path":"notes.txt"}'
    assert tool.attributes["gen_ai.tool.call.result"] == FILE_TEXT


async def test_initialization_options_turn_the_export_on_with_their_endpoint_and_headers(
    sim: Simulator, collector: Receiver, tmp_path: Path
) -> None:
    """No OTEL_* variable: initializationOptions.telemetry alone turns the
    export on, its headers go with every request and are never logged (at
    DEBUG either) nor traced, its serviceName names the resource."""
    trace = tmp_path / "frames.jsonl"
    host = await HostClient.spawn(
        host_argv("--log-level", "DEBUG", "--trace", str(trace)), env={"ANTHROPIC_API_KEY": KEY}
    )
    telemetry = {
        "endpoint": collector.endpoint + "/",
        "headers": {"Authorization": TOKEN},
        "serviceName": "my-editor-agents",
        "captureContent": True,
    }
    await host.initialize({"telemetry": telemetry})
    run_id = await one_tool_run(host, sim, tmp_path)
    assert await host.close() == 0
    spans = collector.spans
    (root,) = by_operation(spans, "invoke_agent")
    assert root.attributes["oma.run.id"] == run_id
    assert root.resource["service.name"] == "my-editor-agents"
    assert "PROMPT-MARKER-2b" in root.attributes["gen_ai.input.messages"]
    assert all(headers.get("authorization") == TOKEN for headers in collector.received.headers)
    assert TOKEN.encode() not in collector.raw
    log = await host.stderr_text()
    frames = trace.read_text()
    assert '"headers": {"Authorization": "[redacted]"}' in frames
    for written in (log, frames):
        assert "collector-token-SECRET" not in written and KEY not in written


async def test_a_client_turns_off_the_export_the_environment_turns_on(
    sim: Simulator, collector: Receiver, tmp_path: Path
) -> None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT`` set in the host's environment and the
    client's ``telemetry.export: false``: the collector receives nothing,
    and the run is recorded in the state directory all the same. The same
    environment with ``export: true`` exports: what the first host did not
    send, it was told not to."""
    state = tmp_path / "state"
    env = {"ANTHROPIC_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
    run_ids = []
    for export in (False, True):
        host = await HostClient.spawn(host_argv("--state-dir", str(state)), env=env)
        await host.initialize({"telemetry": {"export": export}})
        run_ids.append(await one_tool_run(host, sim, tmp_path))
        assert await host.close() == 0  # a session that exports flushes here
        if not export:
            assert collector.received.bodies == []
    kept, exported = run_ids
    shown = show_json(state, kept)
    (root,) = shown["spans"]
    assert root["name"] == "invoke_agent reader"
    assert [child["name"] for child in root["children"]] == [
        "chat sim-1",
        "execute_tool file_read",
        "chat sim-1",
    ]
    runs = {
        span.attributes.get("oma.run.id") for span in by_operation(collector.spans, "invoke_agent")
    }
    assert runs == {exported}


async def test_bad_telemetry_options_are_refused_naming_the_field() -> None:
    host = await HostClient.spawn()
    try:
        for telemetry, where, what in (
            ({"endpoint": "localhost:4318"}, "telemetry.endpoint", "OTLP/HTTP base URL"),
            ({"headers": {"bad name": "x"}}, "telemetry.headers", "not an HTTP header name"),
            ({"captureContent": "yes"}, "telemetry.captureContent", "boolean"),
            ({"export": "false"}, "telemetry.export", "boolean"),
            ({"export": 0}, "telemetry.export", "boolean"),
            ({"endpoints": "http://x"}, "telemetry", "endpoints"),
        ):
            params = {"capabilities": {}, "initializationOptions": {"telemetry": telemetry}}
            _, answer = host.start_request("initialize", params)
            reply = await asyncio.wait_for(answer, 30)
            assert reply["error"]["code"] == -32602, reply
            message = reply["error"]["message"]
            assert f"initializationOptions.{where}" in message and what in message, message
        await host.initialize()  # refused options leave initialize to be tried again
    finally:
        await host.close()


async def test_an_unreachable_collector_never_holds_up_a_run_or_the_exit(
    sim: Simulator, tmp_path: Path
) -> None:
    """A collector that takes the connection and never answers (the export
    timeout set to a minute): the runs answer, and the host exits after its
    bounded wait for the spans, not after the exporter's timeout."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        env = {
            "ANTHROPIC_API_KEY": KEY,
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "60",
            "OTEL_BSP_SCHEDULE_DELAY": "10",  # export at once, so a send is stuck in flight
        }
        host = await HostClient.spawn(env=env)
        await host.initialize()
        for _ in range(3):
            await one_tool_run(host, sim, tmp_path)
        assert await host.close(timeout=20) == 0
        log = await host.stderr_text()
        assert "spans not sent within 3 s" in log, log
    finally:
        silent.close()


# A host whose modules are reported at exit; ``BLOCK_OTEL`` makes the
# OpenTelemetry packages impossible to import, as where the extra is not
# installed.
_REPORT = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('MODULES', *sorted(sys.modules), file=sys.stderr))\n"
    "if sys.argv[1] == 'BLOCK_OTEL':\n"
    "    class NoOtel:\n"
    "        def find_spec(self, name, path=None, target=None):\n"
    "            if name.split('.')[0] == 'opentelemetry':\n"
    "                raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
    "    sys.meta_path.insert(0, NoOtel())\n"
    "from oma_host.cli.main import main\n"
    "sys.exit(main([]))\n"
)


async def _modules_after_runs(
    sim: Simulator, work: Path, env: dict[str, str], block: bool, runs: int = 2
) -> tuple[list[str], str]:
    argv = [sys.executable, "-c", _REPORT, "BLOCK_OTEL" if block else "-"]
    host = await HostClient.spawn(argv, env={"ANTHROPIC_API_KEY": KEY, **env})
    await host.initialize()
    for _ in range(runs):
        await one_tool_run(host, sim, work)
    assert await host.close() == 0
    log = await host.stderr_text()
    report = next(line for line in log.splitlines() if line.startswith("MODULES"))
    return report.split()[1:], log


def _otel(modules: list[str]) -> list[str]:
    return [name for name in modules if name.split(".")[0] == "opentelemetry"]


async def test_without_telemetry_no_opentelemetry_module_is_imported(
    sim: Simulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    modules, _ = await _modules_after_runs(sim, tmp_path, {}, block=False)
    assert "oma_host.core.spans" in modules  # the runs were recorded
    assert not _otel(modules)
    assert "oma_host.telemetry.otel_export" not in modules
    configured, _ = await _modules_after_runs(
        sim, tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}, block=False, runs=1
    )
    assert "opentelemetry.sdk.trace" in configured  # the same host, told to export, does


async def test_a_configured_export_without_the_extra_is_one_warning_and_the_runs_go_on(
    sim: Simulator, collector: Receiver, tmp_path: Path
) -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}
    modules, log = await _modules_after_runs(sim, tmp_path, env, block=True, runs=2)
    assert not _otel(modules)
    warnings = [line for line in log.splitlines() if "pip install 'oma-host[otel]'" in line]
    assert len(warnings) == 1, log
    assert "OpenTelemetry export is configured" in warnings[0]
    assert collector.spans == []


@pytest.mark.parametrize(
    ("env", "why"),
    [
        ({"OTEL_SDK_DISABLED": "true"}, None),
        ({"OTEL_TRACES_EXPORTER": "none"}, None),
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
    ],
)
async def test_the_standard_switches_turn_the_export_off(
    sim: Simulator, collector: Receiver, tmp_path: Path, env: dict[str, str], why: str | None
) -> None:
    full: dict[str, Any] = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint, **env}
    modules, log = await _modules_after_runs(sim, tmp_path, full, block=False, runs=1)
    assert not _otel(modules)
    assert collector.spans == []
    if why is not None:
        assert why in log and "http/protobuf" in log, log
