"""The rules that settle whether and where spans are exported
(``oma_host.telemetry.settings``), over environments given explicitly."""

from __future__ import annotations

from oma_host.telemetry.settings import Telemetry, TelemetryConfig, settle_telemetry

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}


def test_nothing_set_exports_nothing() -> None:
    assert settle_telemetry(environ={}).config is None
    assert settle_telemetry(environ={"OTEL_SERVICE_NAME": "x"}).config is None


def test_an_endpoint_variable_or_the_otlp_exporter_turns_it_on() -> None:
    assert settle_telemetry(environ=ENDPOINT).config == TelemetryConfig()
    traces = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}
    assert settle_telemetry(environ=traces).config == TelemetryConfig()
    assert settle_telemetry(environ={"OTEL_TRACES_EXPORTER": "otlp"}).config == TelemetryConfig()


def test_the_off_switches() -> None:
    assert settle_telemetry(environ={**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"}).config is None
    disabled = {**ENDPOINT, "OTEL_SDK_DISABLED": "TRUE"}
    assert settle_telemetry(environ=disabled).config is None
    # The kill switch wins over an explicit ask too; an exporter of "none" does not.
    asked = settle_telemetry(endpoint="http://c:4318", explicit=True, environ=disabled)
    assert asked.config is None
    none = {"OTEL_TRACES_EXPORTER": "none"}
    on = settle_telemetry(endpoint="http://c:4318", environ=none).config
    assert on is not None and on.traces_endpoint == "http://c:4318/v1/traces"


def test_what_the_exporter_cannot_do_is_a_warning_and_no_export() -> None:
    grpc = settle_telemetry(environ={**ENDPOINT, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"})
    assert grpc.config is None
    (warning,) = grpc.warnings
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in warning and "http/protobuf" in warning
    console = settle_telemetry(environ={**ENDPOINT, "OTEL_TRACES_EXPORTER": "console"})
    assert console.config is None and "otlp only" in console.warnings[0]
    both = settle_telemetry(environ={**ENDPOINT, "OTEL_TRACES_EXPORTER": "console,otlp"})
    assert both.config is not None and not both.warnings


def test_explicit_settings_and_content_capture() -> None:
    settled = settle_telemetry(
        endpoint="https://c.example/otel/",
        headers={"b": "2", "a": "1"},
        service_name="svc",
        capture_content=True,
        environ={},
    ).config
    assert settled == TelemetryConfig(
        traces_endpoint="https://c.example/otel/v1/traces",
        headers=(("a", "1"), ("b", "2")),
        service_name="svc",
    )
    assert "2" not in repr(settled)  # header values (tokens) stay out of reprs
    capture = {**ENDPOINT, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    from_env = settle_telemetry(environ=capture)
    assert from_env.config is not None and from_env.capture_content
    overridden = settle_telemetry(capture_content=False, explicit=True, environ=capture)
    assert overridden.config is not None and not overridden.capture_content
    # An empty ask (initializationOptions.telemetry: {}) is an ask: the variables say where.
    assert settle_telemetry(explicit=True, environ={}).config == TelemetryConfig()


def test_an_explicit_off_wins_over_the_variables_and_the_other_options() -> None:
    otlp = {**ENDPOINT, "OTEL_TRACES_EXPORTER": "otlp"}
    assert settle_telemetry(export=False, environ=otlp) == Telemetry(None)
    # Nor is a warning given about an export that is not made.
    grpc = {**ENDPOINT, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    assert settle_telemetry(export=False, environ=grpc) == Telemetry(None)
    asked = settle_telemetry(
        endpoint="http://c:4318", capture_content=True, explicit=True, export=False, environ={}
    )
    assert asked == Telemetry(None, capture_content=True)  # recorded, not exported


def test_content_capture_is_settled_whether_or_not_the_spans_are_exported() -> None:
    """What the runs' spans record, in the state directory too: the explicit
    choice, else the variable, with no export, and with export turned off."""
    variable = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert settle_telemetry(capture_content=True, environ={}) == Telemetry(
        None, capture_content=True
    )
    assert settle_telemetry(environ=variable) == Telemetry(None, capture_content=True)
    assert not settle_telemetry(capture_content=False, environ=variable).capture_content
    assert not settle_telemetry(environ={}).capture_content
    for off in ({"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_EXPORTER": "none"}):
        settled = settle_telemetry(environ={**variable, **off})
        assert settled == Telemetry(None, capture_content=True)
    grpc = {**ENDPOINT, **variable, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    refused = settle_telemetry(environ=grpc)
    assert refused.config is None and refused.warnings and refused.capture_content


def test_an_explicit_on_turns_it_on_unless_the_sdk_is_disabled() -> None:
    assert settle_telemetry(export=True, environ={}).config == TelemetryConfig()
    on = settle_telemetry(export=True, environ={"OTEL_TRACES_EXPORTER": "none"}).config
    assert on == TelemetryConfig()
    disabled = {"OTEL_SDK_DISABLED": "true"}
    assert settle_telemetry(export=True, explicit=True, environ=disabled).config is None
    # Not said: the variables decide, as before.
    assert settle_telemetry(export=None, environ={}).config is None
    assert settle_telemetry(export=None, environ=ENDPOINT).config == TelemetryConfig()
