"""The handler API (sampling, elicitation, roots) in detail, against the in-memory ScriptedPeer.

Legacy servers ask with JSON-RPC requests; modern ones with ``input_required`` results. The
same handlers, typed params and error codes serve both; the real-server runs are in
``test_eras_sdk.py``.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

import mcpsync
from mcpsync import (
    Client, CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, MCPError, ProtocolError,
    SamplingRejected,
)
from mcpsync._session import era as _era

from ..conftest import LogWatch, server_argv
from ..peer import Responder, ScriptedPeer

MODERN = "2026-07-28"


def legacy_peer(responders: Optional[Dict[str, Responder]] = None) -> ScriptedPeer:
    responders = dict(responders or {})
    responders.setdefault("initialize", lambda peer, message: peer.result(message, {
        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "asker", "version": "1"}}))
    return ScriptedPeer(responders)


def ask(peer: ScriptedPeer, request_id: str, method: str, params: Any = None) -> Dict[str, Any]:
    """Send a server-to-client request and return the client's reply."""
    message: Dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    peer.transport.feed(message)
    return peer.wait_for(lambda m: m.get("id") == request_id and "method" not in m)


SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "Hi?"}}], "maxTokens": 9,
          "modelPreferences": {"hints": [{"name": "claude"}, {"name": "gpt"}]}, "temperature": 0.5}
FORM = {"message": "Your name?", "requestedSchema": {"type": "object", "properties": {
    "name": {"type": "string"}, "lang": {"type": "string", "default": "en"}, "n": {"type": "integer"}}}}


@pytest.fixture
def peer() -> Iterator[ScriptedPeer]:
    with legacy_peer() as peer:
        yield peer


# -- sampling ------------------------------------------------------------------------------------------


def test_a_sampling_handler_gets_typed_params_and_may_return_a_typed_result(peer):
    seen: List[CreateMessageParams] = []

    def sampling(params: CreateMessageParams) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult("Hello", model="m-1", stop_reason="maxTokens")

    with Client(peer.transport, sampling_handler=sampling):
        reply = ask(peer, "s1", "sampling/createMessage", SAMPLE)
    assert reply["result"] == {"role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m-1",
                               "stopReason": "maxTokens"}
    (params,) = seen
    assert (params.text, params.max_tokens, params.temperature, params.model_hints) == ("Hi?", 9, 0.5,
                                                                                          ["claude", "gpt"])
    assert params.tools is None and params.system_prompt is None
    assert params.to_dict() == SAMPLE and params["maxTokens"] == 9 and params == SAMPLE


def test_a_sampling_request_with_tools_needs_sampling_tools_declared(peer):
    with_tools = {**SAMPLE, "tools": [{"name": "calc", "inputSchema": {"type": "object"}}],
                  "toolChoice": {"mode": "auto"}}
    with Client(peer.transport, sampling_handler=lambda params: {"content": params.tools}):
        refused = ask(peer, "s1", "sampling/createMessage", with_tools)
    assert refused["error"]["code"] == -32602
    assert peer.log[0]["params"]["capabilities"] == {"sampling": {}}
    with legacy_peer() as other, Client(other.transport, sampling_tools=True,
                                        sampling_handler=lambda params: {"tools": params.tools,
                                                                          "choice": params.tool_choice}):
        answered = ask(other, "s2", "sampling/createMessage", with_tools)
    assert answered["result"] == {"tools": with_tools["tools"], "choice": {"mode": "auto"}}
    assert other.log[0]["params"]["capabilities"] == {"sampling": {"tools": {}}}


def test_a_sampling_handler_rejects_with_sampling_rejected_which_answers_minus_one(peer):
    def sampling(params: CreateMessageParams) -> Any:
        raise SamplingRejected("The user said no")

    with Client(peer.transport, sampling_handler=sampling):
        reply = ask(peer, "s1", "sampling/createMessage", SAMPLE)
    assert reply["error"] == {"code": -1, "message": "The user said no"}


# -- elicitation ---------------------------------------------------------------------------------------


def test_an_accepted_form_gets_the_schema_defaults_for_the_fields_left_out(peer):
    answers = iter([ElicitResult.accept({"name": "Ada"}), ElicitResult.decline(), {"action": "cancel"}])
    seen: List[ElicitParams] = []

    def elicitation(params: ElicitParams) -> Any:
        seen.append(params)
        return next(answers)

    with Client(peer.transport, elicitation_handler=elicitation):
        accepted = ask(peer, "e1", "elicitation/create", FORM)
        declined = ask(peer, "e2", "elicitation/create", FORM)
        cancelled = ask(peer, "e3", "elicitation/create", {**FORM, "mode": "form"})
    assert accepted["result"] == {"action": "accept", "content": {"name": "Ada", "lang": "en"}}
    assert declined["result"] == {"action": "decline"} and cancelled["result"] == {"action": "cancel"}
    assert [p.mode for p in seen] == ["form"] * 3  # a request without a mode is form mode
    assert seen[0].message == "Your name?" and seen[0].requested_schema == FORM["requestedSchema"]
    assert seen[0].server is not None and seen[0].server.name == "asker"


def test_url_mode_is_handed_to_the_handler_only_when_declared_and_the_url_is_never_fetched(peer):
    url = {"mode": "url", "message": "Sign in", "url": "https://auth.example.com/x?y=1", "elicitationId": "el-7"}
    with Client(peer.transport, elicitation_handler=lambda params: ElicitResult.accept()):
        refused = ask(peer, "e1", "elicitation/create", url)
    assert refused["error"]["code"] == -32602 and "'url'" in refused["error"]["message"]
    seen: List[ElicitParams] = []
    with legacy_peer() as other, Client(other.transport, elicitation_modes=("form", "url"),
                                        elicitation_handler=lambda p: seen.append(p) or ElicitResult.accept()):
        consent = ask(other, "e2", "elicitation/create", url)
    assert consent["result"] == {"action": "accept"}  # consent, no content
    assert (seen[0].url, seen[0].elicitation_id) == ("https://auth.example.com/x?y=1", "el-7")
    assert other.log[0]["params"]["capabilities"] == {"elicitation": {"form": {}, "url": {}}}


def test_elicitation_complete_notifications_reach_their_handler(peer):
    done = threading.Event()
    completed: List[Any] = []
    with Client(peer.transport, elicitation_modes=("url",), elicitation_handler=lambda p: ElicitResult.accept()) \
            as client:
        client.on_notification("notifications/elicitation/complete", lambda p: (completed.append(p), done.set()))
        peer.notify("notifications/elicitation/complete", {"elicitationId": "el-7"})
        assert done.wait(5)
    assert completed == [{"elicitationId": "el-7"}]


# -- roots -----------------------------------------------------------------------------------------------


def test_set_roots_tells_a_legacy_server_and_roots_must_be_file_uris(peer, logs: LogWatch):
    with Client(peer.transport, roots=["/srv/a"]) as client:
        assert ask(peer, "r1", "roots/list")["result"] == {"roots": [{"uri": "file:///srv/a"}]}
        client.set_roots([{"uri": "file:///srv/b", "name": "b"}, {"uri": "https://not.a/root"}])
        peer.wait_for(lambda m: m.get("method") == "notifications/roots/list_changed")
        assert ask(peer, "r2", "roots/list")["result"] == {"roots": [{"uri": "file:///srv/b", "name": "b"}]}
    assert any("roots must be file:// URIs" in m for m in logs.messages())


# -- modern: the same handlers through input_required -----------------------------------------------------


def modern_peer(call: Responder) -> ScriptedPeer:
    def discover(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        peer.result(message, {"supportedVersions": [MODERN], "capabilities": {"tools": {}, "prompts": {}}})

    return ScriptedPeer({"server/discover": discover, "tools/call": call, "prompts/list": call})


def test_an_input_request_for_a_kind_without_a_handler_ends_the_call_without_a_retry():
    def call(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        peer.result(message, {"resultType": "input_required", "requestState": "s",
                              "inputRequests": {"k": {"method": "roots/list", "params": {}}}})

    with modern_peer(call) as peer, Client(peer.transport, protocol="modern") as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("x")
        assert raised.value.code == -32601
        assert len([m for m in peer.log if m.get("method") == "tools/call"]) == 1


def test_input_required_is_invalid_outside_tools_resources_and_prompts():
    def answer(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        peer.result(message, {"resultType": "input_required", "requestState": "s"})

    with modern_peer(answer) as peer, Client(peer.transport, protocol="modern") as client:
        with pytest.raises(ProtocolError, match="prompts/list: the server answered with resultType 'input_required'"):
            client.list_prompts()


def test_a_modern_sampling_rejection_ends_the_call_with_the_rejection():
    def call(peer: ScriptedPeer, message: Dict[str, Any]) -> None:
        peer.result(message, {"resultType": "input_required",
                              "inputRequests": {"k": {"method": "sampling/createMessage", "params": SAMPLE}}})

    def sampling(params: CreateMessageParams) -> Any:
        raise SamplingRejected()

    with modern_peer(call) as peer, Client(peer.transport, protocol="modern", sampling_handler=sampling) as client:
        with pytest.raises(SamplingRejected):
            client.call_tool("x")
    sent = [m for m in peer.log if m.get("method") == "tools/call"]
    assert sent[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {"sampling": {}}


# -- when the cached era stops working, the server is asked again -----------------------------------------------


def test_a_stale_cached_era_is_corrected_by_probing_again():
    legacy_argv = server_argv("era_scripted.py", "legacy-32601")
    modern_argv = server_argv("era_scripted.py", "modern")
    legacy_key = _era.cache_key(mcpsync.StdioTransport(legacy_argv[0], legacy_argv[1:]))
    modern_key = _era.cache_key(mcpsync.StdioTransport(modern_argv[0], modern_argv[1:]))
    _era.cache.remember(legacy_key, "modern")  # e.g. the server was downgraded since
    _era.cache.remember(modern_key, "legacy")  # e.g. the server was upgraded since
    with mcpsync.connect(legacy_argv, timeout=10) as client:
        assert client.era == "legacy"
    with mcpsync.connect(modern_argv, timeout=10) as client:
        assert client.era == "modern"
        assert client.call_tool("echo", {"text": "upgraded"}).text == "upgraded"
    assert (_era.cache.get(legacy_key), _era.cache.get(modern_key)) == ("legacy", "modern")



# -- the examples run ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("script, stdin, expected", [
    ("sampling_handler.py", "", "haiku: Threads wait in silence"),
    ("elicitation_cli.py", "Ada\n\ny\ny\n", "Booked Chez Thread for Ada, 2 people, outside."),
    ("tasks.py", "", "Rendered 5 frames. (status completed)"),
])
def test_the_handler_and_task_examples_run(script, stdin, expected):
    import subprocess
    import sys
    from pathlib import Path

    examples = Path(__file__).parent.parent.parent / "examples"
    done = subprocess.run([sys.executable, str(examples / script)], input=stdin, capture_output=True, text=True,
                          timeout=60, cwd=examples)
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout
