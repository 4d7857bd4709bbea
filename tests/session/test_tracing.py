"""OpenTelemetry trace context in each request's ``_meta`` (SEP-414), against servers that echo the ``_meta`` they read.

The peers are ``tests/servers/era_scripted.py`` (``tools/call meta`` answers with the JSON of the
request's ``_meta``) in a modern and a legacy mode, and, for the connect's own requests, the
official SDK's both-eras server over HTTP behind an ASGI wrapper that records every JSON-RPC
request body it is sent. Spans come from a local SDK ``TracerProvider``, so no global
OpenTelemetry state is touched.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import mcpsync

from ..conftest import server_argv
from ..http_fixtures import UvicornThread, _sdk

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


def test_baggage_goes_along_when_asked_and_a_trace_context_the_caller_set_wins(tracer):
    with mcpsync.connect(server_argv("era_scripted.py", "legacy-32601"), timeout=10, send_baggage=True) as client:
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


@pytest.mark.parametrize("mode", ["modern", "legacy-32601"])
def test_baggage_is_not_sent_by_default_but_the_trace_context_is(tracer, mode):
    """Baggage is the application's own data (here a user id): a server sees it only when asked."""
    with mcpsync.connect(server_argv("era_scripted.py", mode), timeout=10) as client:
        token = context.attach(baggage.set_baggage("user.id", "alice-SECRET"))
        try:
            with tracer.start_as_current_span("no baggage") as span:
                meta = json.loads(client.call_tool("meta").text)
                listed = client.request("tools/list", {})
        finally:
            context.detach(token)
    assert meta["traceparent"].startswith(f"00-{ids(span)}-")
    assert "baggage" not in meta and "alice-SECRET" not in json.dumps(meta)
    assert listed is not None


def test_send_baggage_survives_pickling():
    import pickle

    argv = server_argv("era_scripted.py", "modern")
    client = mcpsync.Client(mcpsync.StdioTransport(argv[0], argv[1:]), send_baggage=True)
    copy = pickle.loads(pickle.dumps(client))
    assert copy.send_baggage is True and mcpsync.Client(client.transport).send_baggage is False


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


class Recorder:
    """ASGI wrapper: keeps the ``(method, params)`` of every JSON-RPC request POSTed to the app."""

    def __init__(self, app):
        self.app = app
        self.received = []

    async def __call__(self, scope, receive, send):
        if scope.get("type") != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            decoded = json.loads(body)
        except ValueError:
            decoded = None
        for item in decoded if isinstance(decoded, list) else [decoded]:
            if isinstance(item, dict) and "method" in item and "id" in item:
                self.received.append((item["method"], item.get("params") or {}))
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def first(self, method):
        return next(params for name, params in self.received if name == method)


@pytest.fixture(scope="module")
def recorded_servers():
    """A dual-era and a legacy-only SDK server, each behind a Recorder; started before the leak snapshot."""
    served = {}
    for mode, options in {"dual": {"json_response": True}, "legacy": {"legacy_only": True}}.items():
        recorder = Recorder(_sdk("era_sdk_server").make_app(**options))
        served[mode] = (recorder, UvicornThread(recorder, name=f"recorded-{mode}").start())
    yield served
    for _, thread in served.values():
        thread.stop()


@pytest.mark.parametrize("mode", ["dual", "legacy"])
def test_the_connects_own_requests_carry_the_active_span(tracer, recorded_servers, mode):
    recorder, served = recorded_servers[mode]
    recorder.received.clear()
    with tracer.start_as_current_span("connect") as span:
        with mcpsync.connect(served.url("/mcp"), timeout=10, log_level="info") as client:
            era = client.era
    served.wait_idle()
    traceparent = f"00-{ids(span)}-{span.get_span_context().trace_flags:02x}"
    discover = recorder.first("server/discover")  # the first request of both: the modern handshake or the probe
    assert discover["_meta"]["traceparent"] == traceparent
    assert discover["_meta"][META_VERSION] == "2026-07-28"  # the reserved envelope keys are kept beside it
    if mode == "legacy":
        assert era == "legacy"
        initialize = recorder.first("initialize")
        assert initialize["_meta"] == {"traceparent": traceparent}
        assert initialize["protocolVersion"] == "2025-11-25" and initialize["clientInfo"]["name"]
        # The connect's own legacy requests after the handshake go on the transport directly: traced too.
        assert recorder.first("logging/setLevel") == {"level": "info", "_meta": {"traceparent": traceparent}}
    else:
        assert era == "modern"
        assert [name for name, _ in recorder.received if name == "initialize"] == []


def test_a_connect_outside_any_span_sends_no_trace_context(recorded_servers):
    recorder, served = recorded_servers["legacy"]
    recorder.received.clear()
    with mcpsync.connect(served.url("/mcp"), timeout=10):
        pass
    served.wait_idle()
    assert "traceparent" not in recorder.first("server/discover")["_meta"]
    assert "_meta" not in recorder.first("initialize")


@pytest.mark.parametrize("asked", [False, True])
def test_the_connects_own_requests_carry_baggage_only_when_asked(tracer, recorded_servers, asked):
    recorder, served = recorded_servers["legacy"]
    recorder.received.clear()
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with tracer.start_as_current_span("connect"):
            with mcpsync.connect(served.url("/mcp"), timeout=10, log_level="info", send_baggage=asked):
                pass
    finally:
        context.detach(token)
    served.wait_idle()
    for method in ("server/discover", "initialize", "logging/setLevel"):
        meta = recorder.first(method)["_meta"]
        assert "traceparent" in meta
        assert meta.get("baggage") == ("tenant=acme" if asked else None), method
