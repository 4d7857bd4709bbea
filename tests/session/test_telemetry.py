"""OpenTelemetry spans and metrics of a client's operations, as the semantic conventions for MCP describe them.

The peers are real servers: ``tests/servers/telemetry_server.py`` (a FakeServer over stdio, whose
``meta`` tool answers with the ``_meta`` it received) and the official SDK's both-eras server over
Streamable HTTP behind an ASGI wrapper recording every JSON-RPC request it is sent. The SDK's
in-memory span exporter and metric reader collect what the client reports. The providers are set
as an application sets them (the global ones) and unset again after each test (OpenTelemetry's
API has no public way to unset them: its own test helpers reset the same two globals).
"""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace
from typing import Any, Dict, List

import pytest

import mcpsync
from mcpsync import Manager

from ..conftest import server_argv
from ..http_fixtures import UvicornThread, _sdk

trace = pytest.importorskip("opentelemetry.trace")
metrics = pytest.importorskip("opentelemetry.metrics")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
sdk_metrics = pytest.importorskip("opentelemetry.sdk.metrics")
from opentelemetry.metrics import _internal as metrics_internal  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.util._once import Once  # noqa: E402

from .test_tracing import Recorder  # noqa: E402

CLIENT = trace.SpanKind.CLIENT
ERROR = trace.StatusCode.ERROR


def _set_globals(tracer_provider: Any, meter_provider: Any) -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    metrics_internal._METER_PROVIDER_SET_ONCE = Once()
    metrics_internal._METER_PROVIDER = None
    if tracer_provider is not None:
        trace.set_tracer_provider(tracer_provider)
    if meter_provider is not None:
        metrics.set_meter_provider(meter_provider)


@pytest.fixture
def otel():
    """Global SDK providers with an in-memory span exporter and metric reader, for one test."""
    exporter = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = sdk_metrics.MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    _set_globals(tracer_provider, meter_provider)

    def points(name: str) -> List[Any]:
        data = reader.get_metrics_data()
        return [point for resource in (data.resource_metrics if data else []) for scope in resource.scope_metrics
                for metric in scope.metrics if metric.name == name for point in metric.data.data_points]

    yield SimpleNamespace(spans=exporter.get_finished_spans, points=points,
                          tracer=tracer_provider.get_tracer("the-application"))
    _set_globals(None, None)
    tracer_provider.shutdown()
    meter_provider.shutdown()


def by_name(spans: Any) -> Dict[str, Any]:
    return {span.name: span for span in spans}


def traceparent(span: Any) -> str:
    found = span.get_span_context()
    return f"00-{found.trace_id:032x}-{found.span_id:016x}-{int(found.trace_flags):02x}"


# -- stdio ---------------------------------------------------------------------------------------


def test_each_stdio_operation_is_a_client_span_named_and_attributed_as_the_conventions_say(otel):
    with otel.tracer.start_as_current_span("agent step") as parent:
        with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10) as client:
            received = json.loads(client.call_tool("meta").text)
            client.read_resource("demo://note")
            client.get_prompt("greet", {"name": "Ada"})
            client.list_tools()
            client.ping()
    spans = by_name(otel.spans())
    call = spans["tools/call meta"]
    # The span is current while the request is sent: the server's parent is this span.
    assert received["traceparent"] == traceparent(call)
    assert call.parent.span_id == parent.get_span_context().span_id
    assert call.kind == CLIENT and call.status.status_code == trace.StatusCode.UNSET
    assert call.attributes["mcp.method.name"] == "tools/call"
    assert call.attributes["gen_ai.tool.name"] == "meta"
    assert call.attributes["gen_ai.operation.name"] == "execute_tool"
    assert call.attributes["network.transport"] == "pipe"
    assert call.attributes["mcp.protocol.version"] == client.protocol_version
    assert call.attributes["jsonrpc.request.id"].isdigit()
    assert "error.type" not in call.attributes and "network.protocol.name" not in call.attributes
    read = spans["resources/read"]  # the URI is an attribute, never in the name (many-valued)
    assert read.attributes["mcp.resource.uri"] == "demo://note" and "gen_ai.operation.name" not in read.attributes
    prompt = spans["prompts/get greet"]
    assert prompt.attributes["gen_ai.prompt.name"] == "greet" and "gen_ai.operation.name" not in prompt.attributes
    names = [span.name for span in otel.spans()]
    assert "tools/list" in names and names.count("server/discover") == 2  # the probe, and ping in this era
    assert all(span.kind == CLIENT for name, span in spans.items() if name != "agent step")
    assert spans["server/discover"].attributes["mcp.protocol.version"] == "2026-07-28"


def test_a_legacy_handshake_is_an_initialize_span_and_a_notification_span(otel):
    with otel.tracer.start_as_current_span("connect"):
        with mcpsync.connect(server_argv("telemetry_server.py", "--legacy-only"), timeout=10) as client:
            received = json.loads(client.call_tool("meta").text)
    spans = by_name(otel.spans())
    initialize, initialized = spans["initialize"], spans["notifications/initialized"]
    assert initialize.attributes["mcp.protocol.version"] == "2025-11-25"  # from the answer
    assert initialize.attributes["jsonrpc.request.id"].isdigit()
    assert initialized.kind == CLIENT and "jsonrpc.request.id" not in initialized.attributes  # no id: a notification
    assert received["traceparent"] == traceparent(spans["tools/call meta"])
    # The era probe the legacy server refused is a failed request like any other.
    probe = spans["server/discover"]
    assert probe.status.status_code == ERROR and probe.attributes["error.type"].startswith("-")


def test_failures_are_error_spans_with_the_error_type_the_conventions_give(otel):
    with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10) as client:
        assert client.call_tool("fail").is_error
        with pytest.raises(mcpsync.MCPError) as raised:
            client.call_tool("no_such_tool")
    spans = by_name(otel.spans())
    failed = spans["tools/call fail"]  # a result with isError: the call worked, the tool did not
    assert failed.status.status_code == ERROR and failed.attributes["error.type"] == "tool_error"
    assert "rpc.response.status_code" not in failed.attributes
    unknown = spans["tools/call no_such_tool"]  # a JSON-RPC error: its code, and its message as the status
    code = str(raised.value.code)
    assert unknown.status.status_code == ERROR and unknown.attributes["error.type"] == code
    assert unknown.attributes["rpc.response.status_code"] == code
    assert unknown.status.description == raised.value.message
    errors = {p.attributes.get("error.type") for p in otel.points("mcp.client.operation.duration")
              if p.attributes["mcp.method.name"] == "tools/call"}
    assert errors == {"tool_error", code}


def test_a_request_that_times_out_is_an_error_span_of_type_timeout(otel):
    with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10) as client:
        with pytest.raises(mcpsync.RequestTimeout):
            client.call_tool("stall", timeout=0.2)
    stalled = by_name(otel.spans())["tools/call stall"]
    assert stalled.status.status_code == ERROR and stalled.attributes["error.type"] == "timeout"
    assert stalled.end_time - stalled.start_time >= 0.2e9  # the span covers the wait


def test_a_request_on_a_dead_connection_is_an_error_span_named_by_its_class(otel):
    client = mcpsync.connect(server_argv("telemetry_server.py"), timeout=10)
    client.transport.close()
    with pytest.raises(mcpsync.TransportClosed):
        client.list_tools()
    client.close()
    failed = by_name(otel.spans())["tools/list"]
    assert failed.status.status_code == ERROR
    assert failed.attributes["error.type"].startswith("mcpsync.exceptions.")


# -- metrics -------------------------------------------------------------------------------------


def test_the_operation_and_session_durations_are_recorded_with_low_cardinality_attributes(otel):
    with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10) as client:
        client.call_tool("meta")
        client.call_tool("meta")
        client.read_resource("demo://note")
        assert otel.points("mcp.client.session.duration") == []  # recorded at close
    calls = [p for p in otel.points("mcp.client.operation.duration") if p.attributes.get("gen_ai.tool.name") == "meta"]
    assert len(calls) == 1 and calls[0].count == 2 and calls[0].sum > 0
    assert dict(calls[0].attributes) == {
        "mcp.method.name": "tools/call", "gen_ai.tool.name": "meta", "gen_ai.operation.name": "execute_tool",
        "mcp.protocol.version": "2026-07-28", "network.transport": "pipe"}
    assert list(calls[0].explicit_bounds)[:3] == [0.01, 0.02, 0.05]  # the conventions' advisory buckets
    for point in otel.points("mcp.client.operation.duration"):  # never a session id, request id or URI
        assert not {"mcp.session.id", "jsonrpc.request.id", "mcp.resource.uri"} & set(point.attributes)
    sessions = otel.points("mcp.client.session.duration")
    assert len(sessions) == 1 and sessions[0].count == 1
    assert dict(sessions[0].attributes) == {"network.transport": "pipe", "mcp.protocol.version": "2026-07-28"}


def test_a_session_whose_server_died_ends_with_an_error_type(otel):
    client = mcpsync.connect(server_argv("telemetry_server.py"), timeout=10)
    with pytest.raises(mcpsync.TransportClosed):
        client.call_tool("die")
    client.close()
    client.close()  # recorded once
    sessions = otel.points("mcp.client.session.duration")
    assert len(sessions) == 1 and sessions[0].count == 1
    assert sessions[0].attributes["error.type"] == "mcpsync.exceptions.TransportClosed"
    died = by_name(otel.spans())["tools/call die"]
    assert died.status.status_code == ERROR and died.attributes["error.type"].startswith("mcpsync.exceptions.")


# -- Streamable HTTP -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded_http():
    """A legacy-only (stateful: it gives a session id) SDK server behind a Recorder."""
    recorder = Recorder(_sdk("era_sdk_server").make_app(legacy_only=True))
    served = UvicornThread(recorder, name="telemetry-http").start()
    yield recorder, served
    served.stop()


def test_streamable_http_spans_carry_the_session_the_server_and_the_network(otel, recorded_http):
    recorder, served = recorded_http
    recorder.received.clear()
    with otel.tracer.start_as_current_span("agent step"):
        with mcpsync.connect(served.url("/mcp"), timeout=10) as client:
            client.call_tool("echo", {"text": "hi"})
            session_id = client.transport.session_id
    served.wait_idle()
    spans = by_name(otel.spans())
    call = spans["tools/call echo"]
    assert session_id and call.attributes["mcp.session.id"] == session_id
    assert call.attributes["network.transport"] == "tcp" and call.attributes["network.protocol.name"] == "http"
    assert call.attributes["server.address"] == "127.0.0.1" and call.attributes["server.port"] == served.port
    assert call.attributes["mcp.protocol.version"] == "2025-11-25"
    assert recorder.first("tools/call")["_meta"]["traceparent"] == traceparent(call)
    # initialize learns the session id from its own answer
    assert spans["initialize"].attributes["mcp.session.id"] == session_id
    point = next(p for p in otel.points("mcp.client.operation.duration")
                 if p.attributes["mcp.method.name"] == "tools/call")
    assert point.attributes["server.port"] == served.port and "mcp.session.id" not in point.attributes


def test_a_json_rpc_error_over_http_is_an_error_span(otel, recorded_http):
    _, served = recorded_http
    with mcpsync.connect(served.url("/mcp"), timeout=10) as client:
        with pytest.raises(mcpsync.MCPError) as raised:
            client.call_tool("url_login")
    served.wait_idle()
    span = by_name(otel.spans())["tools/call url_login"]
    assert span.status.status_code == ERROR and span.attributes["error.type"] == str(raised.value.code)


# -- the switch, and no cost without OpenTelemetry -----------------------------------------------


def test_telemetry_false_makes_no_spans_and_records_nothing_but_still_passes_the_callers_context(otel):
    with otel.tracer.start_as_current_span("agent step") as parent:
        with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10, telemetry=False) as client:
            received = json.loads(client.call_tool("meta").text)
    assert [span.name for span in otel.spans()] == ["agent step"]
    assert otel.points("mcp.client.operation.duration") == [] and otel.points("mcp.client.session.duration") == []
    assert received["traceparent"] == traceparent(parent)


def test_telemetry_survives_pickling():
    import pickle

    argv = server_argv("telemetry_server.py")
    client = mcpsync.Client(mcpsync.StdioTransport(argv[0], argv[1:]), telemetry=False)
    assert pickle.loads(pickle.dumps(client)).telemetry is False


def test_a_servers_telemetry_false_config_key_turns_off_its_spans_through_a_manager(otel, tmp_path):
    def entry(**keys: Any) -> Dict[str, Any]:
        argv = server_argv("telemetry_server.py")
        return {"command": argv[0], "args": argv[1:], **keys}

    with Manager({"quiet": entry(telemetry=False), "loud": entry()}, cache=tmp_path / "cache") as manager:
        assert manager.wait(30)
        manager.call_tool("mcp_quiet_meta", {})
        manager.call_tool("mcp_loud_meta", {})
    assert mcpsync.config.parse_server("x", entry(telemetry="false")).telemetry is False
    calls = [span for span in otel.spans() if span.name == "tools/call meta"]
    assert len(calls) == 1  # the loud server's only


def test_without_a_provider_there_are_no_spans_and_the_callers_context_is_sent():
    exporter = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    with tracer_provider.get_tracer("local").start_as_current_span("not global") as parent:
        with mcpsync.connect(server_argv("telemetry_server.py"), timeout=10) as client:
            received = json.loads(client.call_tool("meta").text)
    assert [span.name for span in exporter.get_finished_spans()] == ["not global"]
    assert received["traceparent"] == traceparent(parent)
    tracer_provider.shutdown()


def test_connect_and_call_without_opentelemetry_loaded_import_none_of_it():
    code = ("import sys, json, mcpsync; "
            f"client = mcpsync.connect({server_argv('telemetry_server.py')!r}, timeout=10); "
            "meta = json.loads(client.call_tool('meta').text); client.list_tools(); client.close(); "
            "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')), sorted(meta))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip().startswith("[] ")
    assert "traceparent" not in out.stdout
