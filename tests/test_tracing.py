"""OpenTelemetry trace context in each request's ``_meta`` (SEP-414), against servers that echo the ``_meta`` they read.

The peers are ``tests/servers/era_scripted.py`` (``tools/call meta`` answers with the JSON of the
request's ``_meta``) in a modern and a legacy mode. Spans come from a local SDK ``TracerProvider``,
so no global OpenTelemetry state is touched.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import mcpsync

from .conftest import server_argv

trace = pytest.importorskip("opentelemetry.trace")
baggage = pytest.importorskip("opentelemetry.baggage")
context = pytest.importorskip("opentelemetry.context")
sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")

META_VERSION = "io.modelcontextprotocol/protocolVersion"


@pytest.fixture
def tracer():
    return sdk_trace.TracerProvider().get_tracer("mcpsync-tests")


def ids(span) -> str:
    found = span.get_span_context()
    return f"{found.trace_id:032x}-{found.span_id:016x}"


@pytest.mark.parametrize("mode", ["modern", "legacy-32601"])
def test_the_active_span_is_in_every_request_meta_in_both_eras(tracer, mode):
    parent = trace.set_span_in_context(trace.NonRecordingSpan(trace.SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0x00F067AA0BA902B7, is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED), trace_state=trace.TraceState([("vendor", "v1")]))))
    with mcpsync.connect(server_argv("era_scripted.py", mode), timeout=10) as client:
        with tracer.start_as_current_span("call meta", context=parent) as span:
            meta = json.loads(client.call_tool("meta").text)
        untraced = json.loads(client.call_tool("meta").text)
    assert meta["traceparent"] == f"00-{ids(span)}-01"
    assert meta["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-")  # the caller's trace, joined
    assert meta["tracestate"] == "vendor=v1"
    assert (META_VERSION in meta) is (mode == "modern")  # the reserved keys are kept beside it
    assert untraced is None or not {"traceparent", "tracestate", "baggage"} & set(untraced)


def test_baggage_goes_along_and_a_trace_context_the_caller_set_wins(tracer):
    with mcpsync.connect(server_argv("era_scripted.py", "legacy-32601"), timeout=10) as client:
        token = context.attach(baggage.set_baggage("tenant", "acme"))
        try:
            with tracer.start_as_current_span("with baggage"):
                meta = json.loads(client.call_tool("meta").text)
                own = "00-11111111111111111111111111111111-2222222222222222-00"
                mine = json.loads(client.request("tools/call", {"name": "meta", "_meta": {"traceparent": own}})
                                  ["content"][0]["text"])
        finally:
            context.detach(token)
    assert meta["baggage"] == "tenant=acme" and "traceparent" in meta
    assert mine["traceparent"] == own and mine["baggage"] == "tenant=acme"


def test_a_span_outside_the_calling_thread_is_not_sent(tracer):
    import threading

    with mcpsync.connect(server_argv("era_scripted.py", "modern"), timeout=10) as client:
        seen = {}
        with tracer.start_as_current_span("elsewhere"):
            worker = threading.Thread(target=lambda: seen.update(json.loads(client.call_tool("meta").text)))
            worker.start()
            worker.join(10)
    assert seen and "traceparent" not in seen


def test_import_mcpsync_loads_no_opentelemetry_and_a_call_without_it_loaded_adds_nothing():
    code = ("import sys, mcpsync; from mcpsync._session import tracing; "
            "before = [m for m in sys.modules if m.startswith('opentelemetry')]; "
            "added = tracing.with_trace_context({'a': 1}); "
            "print(before, [m for m in sys.modules if m.startswith('opentelemetry')], added)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "[] [] {'a': 1}"
