"""The session layer's rules: leaves import nothing upward, one wire-to-typed error mapping.

(Import circles are tests/test_architecture.py's and import-linter's to find: one checker, not two.)"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path
from typing import Dict, Set

import pytest

import mcpsync
from mcpsync._session.errors import typed
from mcpsync._session.session import call_options
from mcpsync._rpc.options import DEFAULT_OPTIONS

PACKAGE = Path(mcpsync.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> Dict[str, Set[str]]:
    """module -> the package modules it imports, at module or function level (TYPE_CHECKING blocks excepted)."""
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: Dict[str, Set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = {id(node) for block in ast.walk(tree)
                   if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
                   for node in ast.walk(block)}
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: Set[str] = set()
        for node in ast.walk(tree):
            if id(node) in skipped:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    found.add(target if target in modules else source)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        graph[name] = {t for t in found if t in modules and t != name and not name.startswith(t + ".")}
    return graph


def test_the_leaves_import_nothing_of_ours_and_the_values_only_leaves():
    graph = _imports()
    assert graph["mcpsync.exceptions"] <= {"mcpsync._protocol", "mcpsync._protocol.codes"}  # the vocabulary leaf
    assert graph["mcpsync._display"] == set()
    assert graph["mcpsync.types"] <= {"mcpsync.exceptions", "mcpsync._display"}
    assert graph["mcpsync.handlers"] <= {"mcpsync.exceptions", "mcpsync.types", "mcpsync._rpc.jsonrpc"}


def test_tasks_and_subscriptions_hold_the_session_not_the_client():
    graph = _imports()
    for name in ("mcpsync.tasks", "mcpsync.subscriptions"):
        assert "mcpsync.client" not in graph[name], name
    for name, targets in graph.items():  # the rooms those public paths show
        if name.startswith("mcpsync._features"):
            assert not targets & {"mcpsync.client", "mcpsync._lifecycle", "mcpsync.tasks", "mcpsync.subscriptions"}, name
    for name, targets in graph.items():
        if name.startswith("mcpsync._session"):
            assert not targets & {"mcpsync.client", "mcpsync.tasks", "mcpsync.subscriptions", "mcpsync.manager"}, name
        if name.startswith("mcpsync._fleet"):
            assert "mcpsync.manager" not in targets, name


def test_an_error_object_from_the_wire_becomes_an_mcp_error():
    error = mcpsync.MCPError.from_wire({"code": -32602, "message": "bad", "data": {"x": 1}}, http_status=400)
    assert (type(error), error.code, error.message, error.data, error.http_status) == (
        mcpsync.MCPError, -32602, "bad", {"x": 1}, 400)
    odd = mcpsync.MCPError.from_wire({"code": "nope"})
    assert (odd.code, odd.message, odd.http_status) == (-32603, "", None)


def test_typed_errors_keep_their_http_status_and_parse_url_elicitations():
    wire = {"code": -32042, "message": "log in", "data": {"elicitations": [
        {"mode": "url", "url": "https://example.com/login", "message": "Sign in"}, "junk"]}}
    error = typed(mcpsync.MCPError.from_wire(wire, http_status=400))
    assert isinstance(error, mcpsync.URLElicitationRequired) and error.http_status == 400
    assert [e.url for e in error.elicitations] == ["https://example.com/login"]
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is mcpsync.URLElicitationRequired and [e.url for e in copy.elicitations] == [
        "https://example.com/login"]
    missing = typed(mcpsync.MCPError(-32021, "needs sampling", {"requiredCapabilities": {"sampling": {}}}))
    assert isinstance(missing, mcpsync.MissingClientCapability)
    plain = mcpsync.MCPError(-32602, "bad")
    assert typed(plain) is plain


@pytest.mark.parametrize(("code", "modern", "not_found"), [
    (-32002, False, True), (-32602, True, True), (-32602, False, True), (-32601, True, False),
    (-32601, False, False)])
def test_resource_not_found_depends_on_the_code_in_every_era(code, modern, not_found):
    error = typed(mcpsync.MCPError(code, "gone"), resource_read=True, modern=modern)
    assert isinstance(error, mcpsync.ResourceNotFound) is not_found


def test_a_call_with_no_options_shares_the_default_options_value():
    assert call_options(None, None) is DEFAULT_OPTIONS
    token = mcpsync.CancelToken()
    assert call_options(5.0, token).timeout == 5.0 and call_options(5.0, token).cancel is token


def test_session_expired_is_exported_from_exceptions():
    from mcpsync import exceptions

    assert "SessionExpired" in exceptions.__all__


@pytest.mark.parametrize("asked, seconds", [(1e300, 60.0), (float("inf"), None), (float("nan"), None),
                                            (-5, None), (250, 0.25), (True, None)])
def test_a_hostile_poll_interval_is_bounded_or_ignored(asked, seconds):
    from mcpsync.tasks import TaskInfo

    info = TaskInfo.from_dict({"taskId": "t", "status": "working", "pollInterval": asked})
    assert info.poll_interval == seconds



def _answering(transport, message):
    """A peer for a MemoryTransport: every request is answered at once with ``{}``."""
    if "method" in message and "id" in message:
        transport.feed({"jsonrpc": "2.0", "id": message["id"], "result": {}})


def test_the_session_builds_the_engine_and_hands_it_to_the_transport():
    # The engine is the session's: a transport offers its wire and is given the engine it feeds
    # (what was set on the transport before, its timeout and a recorder's tap, goes over to it).
    from mcpsync.transports import MemoryTransport

    transport = MemoryTransport(_answering)
    seen = []
    transport.set_message_tap(lambda direction, item: seen.append(direction))
    transport.timeout = 7.0
    assert transport.engine is None  # a transport builds none of its own
    client = mcpsync.Client(transport)
    engine = transport.engine
    assert engine is not None and engine.default_timeout == 7.0 and engine.tap is not None
    try:
        transport.open()
        assert transport.request("sync") == {}  # through the session's engine, both ways
        assert seen[:2] == ["send", "recv"]
        assert transport.engine is engine
    finally:
        client.close()


def test_a_transport_driven_on_its_own_builds_the_same_engine_at_first_need():
    from mcpsync.transports import MemoryTransport

    with MemoryTransport(_answering) as transport:
        assert transport.request("sync") == {}
        engine = transport.engine
        assert engine is not None
        assert mcpsync.Client(transport).transport.engine is engine  # a client takes it as it is
