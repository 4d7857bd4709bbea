"""Protocol eras against scripted peers: the probe's edge cases, multi round-trip, headers, caching.

The stdio peers are ``tests/servers/era_scripted.py`` (stdlib only, one mode per edge case);
the HTTP peer is ``tests/servers/http_era.py``. The same features against the official SDK are
in ``test_eras_sdk.py``.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, Iterator, List

import pytest

import mcpsync
from mcpsync import (
    CreateMessageResult, ElicitResult, HTTPStatusError, MCPError, ProtocolError, RequestTimeout, ResourceNotFound,
    UnsupportedProtocolVersion,
)
from mcpsync._session import era as _era
from mcpsync._session.routing import encode_value, header_plan, param_headers, routing_headers
from mcpsync._features.lists import ListCache

from ..conftest import LogWatch, server_argv, until
from ..http_fixtures import mis  # noqa: F401  (fixture)
from ..peer import ScriptedPeer

MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"


def scripted(mode: str) -> List[str]:
    return server_argv("era_scripted.py", mode)


def received(client: mcpsync.Client) -> List[str]:
    """What the scripted stdio server read, as ``"<method> <id>"`` (from its stderr)."""
    return [line[5:] for line in client.transport.stderr_tail if line.startswith("RECV ")]


# -- the stdio probe -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy-32601", "legacy-32602"])
def test_a_legacy_server_refusing_the_probe_with_any_error_gets_initialize_after_one_round_trip(mode):
    with mcpsync.connect(scripted(mode), timeout=10) as client:
        assert client.protocol_version == "2025-11-25" and client.era == "legacy" and not client.modern
        assert client.server_info.name == f"scripted-{mode}"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        until(lambda: len(received(client)) >= 4)
        seen = received(client)
    assert seen[:3] == ["server/discover 1", "initialize 2", "notifications/initialized null"]


def test_a_legacy_server_that_never_answers_costs_the_probe_timeout_and_is_not_sent_a_cancellation():
    with mcpsync.connect(scripted("legacy-silent"), probe_timeout=0.3, timeout=10) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {"text": "late but fine"}).text == "late but fine"
        until(lambda: len(received(client)) >= 4)
        seen = received(client)
    assert seen[:3] == ["server/discover 1", "initialize 2", "notifications/initialized null"]
    assert not [line for line in seen if line.startswith("notifications/cancelled")]


def test_the_era_is_cached_per_command_line_so_the_second_connect_does_not_probe():
    with mcpsync.connect(scripted("legacy-silent"), probe_timeout=0.3, timeout=10) as first:
        assert first.era == "legacy"
    assert _era.cache.get(_era.cache_key(first.transport)) == "legacy"
    with mcpsync.connect(scripted("legacy-silent"), probe_timeout=0.3, timeout=10) as second:
        assert second.era == "legacy"
        until(lambda: bool(received(second)))
        seen = received(second)
    assert seen[0] == "initialize 1"  # no probe this time
    with mcpsync.connect(scripted("legacy-32601"), timeout=10) as other:  # another command line: probed
        until(lambda: bool(received(other)))
        assert received(other)[0] == "server/discover 1"


def test_a_late_answer_to_the_probe_is_dropped_by_id(logs: LogWatch):
    with mcpsync.connect(scripted("legacy-late"), probe_timeout=0.2, timeout=10) as client:
        assert client.protocol_version == "2025-11-25"
        logs.wait_for(lambda message: message == "LATE ANSWER SENT")
        assert client.call_tool("echo", {"text": "after"}).text == "after"  # the late line is read by now
        assert client.transport._engine.unknown_responses == 1
    assert any("Dropping response for unknown or finished request id 1" in m for m in logs.messages())


def test_a_modern_refusal_listing_a_legacy_version_negotiates_that_version():
    with mcpsync.connect(scripted("legacy-list"), timeout=10) as client:
        assert client.protocol_version == "2025-06-18"
        until(lambda: "INITIALIZE asked 2025-11-25" in client.transport.stderr_tail)


def test_a_modern_refusal_listing_no_version_we_speak_raises_unsupported_protocol_version():
    with pytest.raises(UnsupportedProtocolVersion) as raised:
        mcpsync.connect(scripted("unsupported"), timeout=10)
    assert "2027-01-01" in str(raised.value)


def test_protocol_legacy_skips_the_probe_and_an_exact_version_is_asked_for():
    with mcpsync.connect(scripted("legacy-list"), protocol="2025-06-18", timeout=10) as client:
        assert client.protocol_version == "2025-06-18"
        until(lambda: "INITIALIZE asked 2025-06-18" in client.transport.stderr_tail)
        assert received(client)[0] == "initialize 1"
    with pytest.raises(UnsupportedProtocolVersion):  # asked 2025-03-26 exactly; the server answers 2025-11-25
        mcpsync.connect(scripted("legacy-32601"), protocol="2025-03-26", timeout=10)


def test_an_unknown_protocol_value_is_refused_before_anything_starts():
    with pytest.raises(ValueError, match="Unknown protocol 'newest'"):
        mcpsync.Client(mcpsync.StdioTransport("true"), protocol="newest")


# -- modern requests over stdio --------------------------------------------------------------------------


@pytest.fixture
def modern() -> Iterator[mcpsync.Client]:
    with mcpsync.connect(scripted("modern"), timeout=10) as client:
        yield client


def test_a_modern_server_is_described_by_server_discover(modern):
    assert (modern.protocol_version, modern.era, modern.modern) == (MODERN, "modern", True)
    assert (modern.server_info.name, modern.server_info.version) == ("scripted-modern", "3")
    assert modern.instructions == "scripted"
    assert modern.server_capabilities == {"tools": {}, "resources": {"subscribe": True}}
    modern.ping()  # no ping in 2026: server/discover answers instead


def test_every_modern_request_carries_version_capabilities_and_client_info_in_meta():
    with mcpsync.connect(scripted("modern"), timeout=10, client_info={"title": "Tester"}) as client:
        meta = json.loads(client.call_tool("meta").text)
        client.set_logging_level("warning")
        with_level = json.loads(client.call_tool("meta").text)
    assert meta == {META_VERSION: MODERN, META_CAPABILITIES: {},
                    META_INFO: {"name": "mcpsync", "version": mcpsync.__version__, "title": "Tester"}}
    assert with_level[META_LOG_LEVEL] == "warning"
    with mcpsync.connect(scripted("modern"), timeout=10, send_client_info=False, roots=["/srv"],
                         sampling_handler=lambda params: {}, elicitation_handler=lambda params: {},
                         elicitation_modes=("form", "url")) as client:
        meta = json.loads(client.call_tool("meta").text)
    assert META_INFO not in meta
    assert meta[META_CAPABILITIES] == {"roots": {}, "sampling": {}, "elicitation": {"form": {}, "url": {}}}


def test_input_required_is_answered_three_times_with_state_echoed_exactly_and_new_ids():
    asked: List[Any] = []

    def elicit(params):
        asked.append(("elicit", params.message, params.mode, params.server.name))
        return ElicitResult.accept({"name": "Ada"})  # colour left out: its default is filled in

    def sample(params):
        asked.append(("sample", params.text, params.max_tokens))
        return CreateMessageResult("hi!", model="test-model")

    with mcpsync.connect(scripted("modern"), timeout=10, elicitation_handler=elicit, sampling_handler=sample,
                         roots=["/srv/data"]) as client:
        answers = json.loads(client.call_tool("ask3").text)
        until(lambda: len([line for line in client.transport.stderr_tail if line.startswith("ASK3 ")]) == 4)
        log = [line for line in client.transport.stderr_tail if line.startswith("ASK3 ")]
    assert asked == [("elicit", "Name?", "form", "scripted-modern"), ("sample", "Say hi", 5)]
    assert answers == {"q3": {"roots": [{"uri": "file:///srv/data"}]}}
    ids = [line.split()[1] for line in log]
    states = [line.split(" answers=")[0].split("state=", 1)[1] for line in log]
    assert len(set(ids)) == 4  # every retry is a new request
    assert states == ["null", '"first"', json.dumps('second \u00e9 "quoted" \\ state'), '"third"']
    first_answer = json.loads(log[1].split(" answers=", 1)[1])
    assert first_answer == {"q1": {"action": "accept", "content": {"name": "Ada", "colour": "green"}}}


def test_a_server_that_keeps_asking_is_given_up_on_after_max_input_rounds():
    with mcpsync.connect(scripted("modern"), timeout=10, max_input_rounds=3) as client:
        with pytest.raises(ProtocolError, match="still wanted input after 3 rounds"):
            client.call_tool("loop")
        until(lambda: len([line for line in received(client) if line.startswith("tools/call")]) == 4)


def test_an_unknown_result_type_is_an_invalid_result(modern):
    with pytest.raises(ProtocolError, match="resultType 'weird', which this client does not know"):
        modern.call_tool("weird")
    with pytest.raises(ProtocolError, match="resultType 'task', which is not valid here"):
        modern.call_tool("task_anyway")  # no tasks extension declared on that request
    assert modern.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_resource_not_found_from_a_modern_server_is_resource_not_found(modern):
    with pytest.raises(ResourceNotFound) as raised:
        modern.read_resource("missing://x")
    assert raised.value.code == -32602 and isinstance(raised.value, MCPError)


def test_a_modern_subscription_routes_by_subscription_id_takes_sub_resources_and_cancels_on_close(modern):
    updates: List[str] = []
    arrived = threading.Event()

    def on_update(uri: str) -> None:
        updates.append(uri)
        arrived.set()

    with modern.subscribe("file:///srv/dir", on_update) as subscription:
        assert subscription.active
        assert arrived.wait(10)
        modern.call_tool("echo", {"text": "sync"})  # anything else the stream sent has been read by now
    assert updates == ["file:///srv/dir/child"]  # the other stream's update did not reach us
    assert not subscription.active
    listen_id = next(line.split()[1] for line in received(modern) if line.startswith("subscriptions/listen"))
    until(lambda: f"LISTEN CANCELLED {listen_id}" in modern.transport.stderr_tail)  # stdio: notifications/cancelled


# -- HTTP: the modern request first, then the 4xx body ---------------------------------------------------------


def test_an_http_400_with_an_empty_body_means_legacy(era_http):
    server = era_http("empty-400")
    with mcpsync.connect(server.url()) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {"text": "legacy"}).text == "legacy"
    probe, initialize = server.calls()[:2]
    assert (probe.rpc_method, probe.headers["mcp-protocol-version"], probe.headers["mcp-method"]) == (
        "server/discover", MODERN, "server/discover")
    assert initialize.rpc_method == "initialize" and "mcp-protocol-version" not in initialize.headers
    assert "mcp-method" not in initialize.headers
    assert server.calls("tools/call")[0].headers["mcp-protocol-version"] == "2025-11-25"



def test_an_empty_success_to_the_http_probe_is_a_legacy_server_not_an_error(era_http):
    server = era_http("empty-ok")
    with mcpsync.connect(server.url()) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {"text": "legacy"}).text == "legacy"
    assert [call.rpc_method for call in server.calls()[:2]] == ["server/discover", "initialize"]

def test_modern_http_requests_carry_the_metadata_headers_and_drop_invalid_tools(era_http, logs):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        assert client.protocol_version == MODERN
        names = [tool.name for tool in client.list_tools()]
        assert client.call_tool("naïve tool").text == "naïve tool"
    assert names == ["echo", "route", "naïve tool", "ask_route"]  # "bad" has an x-mcp-header under "items"
    assert any("Leaving out tool 'bad'" in m and "not reachable through 'properties'" in m for m in logs.messages())
    call = server.calls("tools/call")[-1]
    assert call.headers["mcp-method"] == "tools/call"
    assert call.headers["mcp-name"] == "=?base64?" + "bmHDr3ZlIHRvb2w=" + "?="
    assert call.headers["mcp-protocol-version"] == call.body["params"]["_meta"][META_VERSION] == MODERN
    assert not [r for r in server.calls() if r.method in ("GET", "DELETE")]  # no GET stream, no session


def test_a_header_mismatch_makes_the_client_list_the_tools_again_and_retry_once(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        result = client.call_tool("route", {"region": " eu west ", "limit": 5, "flag": True})
    assert result.text == "routed to  eu west "
    assert [r.rpc_method for r in server.calls() if r.method == "POST"] == [
        "server/discover", "tools/list", "tools/call", "tools/list", "tools/call"]
    headers = server.calls("tools/call")[-1].headers
    assert (headers["mcp-param-region"], headers["mcp-param-limit"], headers["mcp-param-flag"]) == (
        "=?base64?IGV1IHdlc3Qg?=", "5", "true")


def test_cancelling_on_modern_http_closes_the_stream_and_sends_no_notification(era_http):
    server = era_http("modern")
    with mcpsync.connect(server.url()) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("block", timeout=0.3)
        assert server.stream_closed.wait(10)
        assert client.call_tool("echo", {"text": "goes on"}).text == "goes on"
    assert not server.calls("notifications/cancelled")


def test_a_broken_listen_stream_is_sent_again_with_a_new_id(era_http):
    server = era_http("modern")
    updated = threading.Event()
    updates: List[str] = []
    with mcpsync.connect(server.url()) as client:
        # subscribe() returns once the first stream is acknowledged; that stream is then cut.
        with client.subscribe("demo://a", lambda uri: (updates.append(uri), updated.set())):
            assert updated.wait(10)  # from the second stream
    listens = server.calls("subscriptions/listen")
    assert len(listens) == 2 and listens[0].body["id"] != listens[1].body["id"]
    assert updates == ["demo://a"]


def test_a_404_with_method_not_found_means_modern_even_without_server_discover(era_http):
    server = era_http("modern-404")
    with mcpsync.connect(server.url()) as client:
        assert client.protocol_version == MODERN and client.server_capabilities == {}
        assert client.call_tool("echo", {"text": "undescribed"}).text == "undescribed"
        with pytest.raises(MCPError) as raised:
            client.request("no/such")
    assert (raised.value.code, raised.value.http_status) == (-32601, 404)


def test_authentication_failures_on_the_probe_are_raised_not_taken_for_legacy(mis):
    server = mis(status=(401, "who are you?", {"WWW-Authenticate": "Bearer"}))
    with pytest.raises(HTTPStatusError) as raised:
        mcpsync.connect(server.url("/mcp"))
    assert raised.value.status_code == 401 and [r.rpc_method for r in server.records] == ["server/discover"]



# -- caching --------------------------------------------------------------------------------------------------


def modern_peer(tools_ttl: Any, scope: str = "public") -> ScriptedPeer:
    def discover(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        peer.result(message, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}})

    def tools(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        page: Dict[str, Any] = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "cacheScope": scope}
        if tools_ttl is not None:
            page["ttlMs"] = tools_ttl
        peer.result(message, page)

    return ScriptedPeer({"server/discover": discover, "tools/list": tools})


@pytest.mark.parametrize("ttl, lists", [(60_000, 1), (0, 2), (None, 2), (-5, 2)])
def test_a_modern_list_is_served_from_the_cache_only_while_its_ttl_lasts(ttl, lists):
    with modern_peer(ttl) as peer, mcpsync.Client(peer.transport, protocol="modern") as client:
        assert client.protocol_version == MODERN
        assert [t.name for t in client.list_tools()] == ["t"]
        assert [t.name for t in client.list_tools()] == ["t"]
        assert len([m for m in peer.log if m.get("method") == "tools/list"]) == lists
        client.list_tools(refresh=True)
        assert len([m for m in peer.log if m.get("method") == "tools/list"]) == lists + 1



def refusing_peer(refusals: int) -> ScriptedPeer:
    """A modern server that refuses its first ``refusals`` server/discover requests with -32022, though
    it lists the very version asked for (what the conformance suite's request-metadata server does)."""
    refused: List[Dict[str, Any]] = []

    def discover(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        if len(refused) < refusals:
            refused.append(message)
            asked = message["params"]["_meta"][META_VERSION]
            peer.error(message, -32022, "Unsupported protocol version", {"supported": [MODERN], "requested": asked})
            return
        peer.result(message, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}})

    return ScriptedPeer({"server/discover": discover})


def test_a_refused_discover_is_retried_once_at_a_version_both_speak():
    with refusing_peer(1) as peer, mcpsync.Client(peer.transport, protocol="modern") as client:
        assert client.protocol_version == MODERN
        assert len([m for m in peer.log if m.get("method") == "server/discover"]) == 2


def test_a_refused_probe_is_retried_once_at_a_version_both_speak_not_taken_for_legacy():
    with mcpsync.connect(scripted("modern-refuse-once"), timeout=10) as client:
        assert client.protocol_version == MODERN
        until(lambda: len([r for r in received(client) if r.startswith("server/discover")]) == 2)
        assert not [r for r in received(client) if r.startswith("initialize")]


def test_a_server_refusing_a_version_it_lists_twice_is_called_inconsistent_not_retried_forever():
    with refusing_peer(5) as peer:
        with pytest.raises(UnsupportedProtocolVersion) as raised:
            mcpsync.Client(peer.transport, protocol="modern").connect(timeout=10)
        assert len([m for m in peer.log if m.get("method") == "server/discover"]) == 2
    text = str(raised.value)
    assert "refused protocol version '2026-07-28' twice" in text and "inconsistent" in text
    assert "this client supports 2026-07-28" not in text  # the old self-contradicting wording

def test_private_cache_entries_stay_with_their_credential():
    cache = ListCache()
    cache.store_pages("tools", ["a"], [(60_000, "private")], cache.generation, credential="alice")
    assert cache.get("tools", "alice") == ["a"] and cache.get("tools", "bob") is None
    cache.store_pages("tools", ["b"], [(60_000, "public"), (30_000, "public")], cache.generation, credential="alice")
    assert cache.get("tools", "bob") == ["b"]
    generation = cache.generation
    cache.invalidate("tools")
    cache.store_pages("tools", ["stale"], [(60_000, "public")], generation, credential=None)  # fetched before
    assert cache.get("tools", None) is None


# -- the header rules -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, sent", [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ("tab\tinside", "tab\tinside"),
])
def test_header_values_follow_the_spec_encoding_table(value, sent):
    assert encode_value(value) == sent


@pytest.mark.parametrize("schema, reason", [
    ({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}, "string, integer or boolean"),
    ({"properties": {"a": {"type": "string", "x-mcp-header": "Not A Token"}}}, "not a valid header name"),
    ({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}, "not a valid header name"),
    ({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "integer", "x-mcp-header": "x"}}},
     "repeats"),
    ({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}, "not reachable"),
    ({"type": "string", "x-mcp-header": "Root"}, "the schema root"),
])
def test_invalid_x_mcp_header_annotations_are_rejected_with_a_reason(schema, reason):
    with pytest.raises(ValueError, match=reason):
        header_plan(schema)


def test_the_header_plan_follows_nested_properties_and_omits_absent_and_null_values():
    plan = header_plan({"type": "object", "properties": {
        "where": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        "n": {"type": "integer", "x-mcp-header": "N"}, "ok": {"type": "boolean", "x-mcp-header": "Ok"}}})
    assert plan == {("where", "zone"): "Zone", ("n",): "N", ("ok",): "Ok"}
    assert param_headers(plan, {"where": {"zone": "b"}, "n": None, "ok": False}) == {
        "Mcp-Param-Zone": "b", "Mcp-Param-Ok": "false"}
    assert param_headers(plan, {"n": 2 ** 60}) == {}  # outside JavaScript's safe integers: not mirrored
    message = {"method": "tasks/get", "params": {"taskId": "t 1 "}}
    assert routing_headers(message, {}) == {"Mcp-Method": "tasks/get", "Mcp-Name": "=?base64?dCAxIA==?="}
    assert routing_headers({"method": "resources/read", "params": {"uri": "demo://a"}}, {})["Mcp-Name"] == "demo://a"



@pytest.mark.parametrize("subscribed, updated, covered", [
    ("file:///srv/dir", "file:///srv/dir", True),
    ("file:///srv/dir", "file:///srv/dir/a.txt", True),
    ("file:///srv/dir/", "file:///srv/dir/a.txt", True),
    ("file:///srv/dir", "file:///srv/directory", False),
    ("db://t", "db://t?row=3", True),
    ("db://t", "db://other", False),
])
def test_an_update_concerns_a_subscription_to_the_resource_or_one_above_it(subscribed, updated, covered):
    from mcpsync.subscriptions import covers

    assert covers(subscribed, updated) is covered


def test_a_request_from_a_modern_server_is_ignored_not_answered(logs):
    # 2026-07-28 has no server-to-client requests; the client must not write responses. The session
    # decides it (Session.speak), on the engine it built for the transport.
    from types import SimpleNamespace

    from mcpsync._session.responder import Responder
    from mcpsync._session.session import Session
    from tests.peer import ScriptedPeer

    with ScriptedPeer() as peer:
        owner = SimpleNamespace(sampling_handler=None, elicitation_handler=None, roots=None)
        session = Session(peer.transport, Responder(owner), client_info=None, max_input_rounds=1, log_level=None,
                          renew=lambda _session, _options: None)
        assert peer.transport.engine is session.engine
        session.speak("2026-07-28")
        peer.transport.set_inline_handler("ping", lambda params: {})
        peer.transport.feed({"jsonrpc": "2.0", "id": "s1", "method": "ping"})
        assert peer.transport.request("sync") == {"echo": None}  # a round trip after the request
        assert not any(m.get("id") == "s1" for m in peer.log)
        session.speak("2025-11-25")
        peer.transport.feed({"jsonrpc": "2.0", "id": "s2", "method": "ping"})
        assert peer.wait_for(lambda m: m.get("id") == "s2")["result"] == {}
    assert any("no server-to-client requests" in m for m in logs.messages())
