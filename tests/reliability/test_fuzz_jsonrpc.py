"""Property tests of the JSON-RPC decoder, classifier and engine: nothing a server sends escapes untyped.

Arbitrary bytes and arbitrary JSON values (shaped like JSON-RPC messages or
not, single or batched, nested deep) may only ever raise ProtocolError, the
error the readers catch and skip: so no input can kill a reader thread. And a
pending request is only ever resolved by a response naming its exact id.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Dict, List

import pytest
from hypothesis import given, strategies as st

from mcpsync import MCPError, ProtocolError, TransportClosed
from mcpsync._rpc import jsonrpc as rpc
from mcpsync._rpc.engine import Engine, _Waiter
from mcpsync._rpc.wire import CallWire

from .conftest import PROPERTY_SETTINGS, TIERS

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=20)
ids = (st.integers(min_value=0, max_value=6) | st.sampled_from(["1", "2", "01", ""]) | st.just(1.0)
       | st.booleans() | st.none() | json_values)
methods = (st.sampled_from(["notifications/cancelled", "notifications/progress", "notifications/message",
                            "ping", "roots/list", "sampling/createMessage", "tools/call"])
           | st.text(max_size=10) | json_values)
params = (st.fixed_dictionaries({}, optional={
    "requestId": ids, "progressToken": ids, "progress": json_values, "total": json_values,
    "message": json_values, "reason": json_values, "_meta": json_values}) | json_values)
errors = st.fixed_dictionaries({}, optional={"code": st.integers(-40000, 40000) | json_values,
                                             "message": json_values, "data": json_values}) | json_values
wire = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.just("2.0") | json_values, "id": ids, "method": methods, "params": params,
    "result": json_values, "error": errors})
messages = st.one_of(wire, json_values, st.lists(wire | json_values, max_size=4))
nests = st.integers(min_value=0, max_value=5000).flatmap(
    lambda depth: st.sampled_from([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth]))
raw = st.one_of(st.binary(max_size=300), nests, st.text(alphabet='{}[]":,0123456789.eE+-tfnrulasNIy \\',
                                                       max_size=200).map(str.encode))


@pytest.mark.parametrize("tier", TIERS)
def test_decoding_any_bytes_returns_json_or_raises_protocol_error(tier: str, quiet: None) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(raw)
    def check(data: bytes) -> None:
        try:
            value = rpc.decode(data)
        except ProtocolError:
            return
        assert rpc.decode(rpc.encode({"v": value})) == {"v": value}  # whatever decodes, re-encodes

    check()


@pytest.mark.parametrize("tier", TIERS)
def test_the_decoder_agrees_with_the_standard_library_on_any_input(tier: str, quiet: None) -> None:
    # decode() takes a shortcut (the scanner, then a look at what follows the value); it must
    # accept and refuse exactly what json.loads does (less NaN and Infinity, and nesting deeper
    # than MAX_DEPTH, which it refuses).
    @PROPERTY_SETTINGS[tier]
    @given(raw | json_values.map(lambda v: (json.dumps(v) + "\n").encode()))
    def check(data: bytes) -> None:
        try:
            expected = json.loads(data.decode("utf-8"), parse_constant=_refuse)
        except (ValueError, RecursionError):
            with pytest.raises(ProtocolError):
                rpc.decode(data)
            return
        if rpc.nesting_depth(expected) > rpc.MAX_DEPTH:
            with pytest.raises(rpc.NestedTooDeeply):
                rpc.decode(data)
            return
        assert rpc.decode(data) == expected

    check()


def _refuse(name: str) -> None:
    raise ValueError(name)


@pytest.mark.parametrize("tier", TIERS)
def test_classifying_any_json_value_names_a_kind_or_raises_protocol_error(tier: str, quiet: None) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(st.one_of(wire, json_values))
    def check(value: Any) -> None:
        try:
            kind = rpc.classify(value)
        except ProtocolError:
            return
        assert kind in (rpc.REQUEST, rpc.NOTIFICATION, rpc.RESPONSE)

    check()


def named(message: Any, request_id: int) -> List[Dict[str, Any]]:
    """The messages (batch items included) that carry ``request_id`` as an integer id."""
    items = message if isinstance(message, list) else [message]
    return [m for m in items if isinstance(m, dict) and type(m.get("id")) is int and m["id"] == request_id]


def parked() -> Any:
    """A caller's wake-up lock as the engine hands it out: held until the answer releases it."""
    lock = threading.Lock()
    lock.acquire()
    return lock


@pytest.mark.parametrize("tier", TIERS)
def test_the_engine_takes_any_message_sequence_and_never_misroutes_an_answer(tier: str, quiet: None) -> None:
    @PROPERTY_SETTINGS[tier]
    @given(st.lists(messages, max_size=6))
    def check(sequence: List[Any]) -> None:
        sent: List[Any] = []
        engine = Engine(CallWire(sent.append), name="fuzz")  # no handlers: requests are refused, on this thread
        engine.incoming.set_inline_handler("ping", lambda params: {})
        waiters = {request_id: _Waiter("tools/call", None, False, parked()) for request_id in (1, 2, 3)}
        engine._waiters.update(waiters)
        for message in sequence:
            try:
                engine.receive(message)
            except ProtocolError:
                pass
        for request_id, waiter in waiters.items():
            if not waiter.done:
                continue
            candidates = [m for message in sequence for m in named(message, request_id)]
            assert candidates, f"request {request_id} was resolved by a message not naming it"
            if isinstance(waiter.error, MCPError):
                assert any(isinstance(m.get("error"), dict) and m["error"].get("code") == waiter.error.code
                           for m in candidates)
            elif waiter.error is None:
                assert any("result" in m and m["result"] == waiter.result for m in candidates)
            else:
                assert isinstance(waiter.error, ProtocolError)
        for reply in sent:  # what the engine answered is always valid JSON-RPC it can encode
            rpc.decode(rpc.encode(reply))
        engine.close(TransportClosed, join_timeout=1.0)

    check()
