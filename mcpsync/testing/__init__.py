"""mcpsync.testing: an in-process MCP server for testing code that uses MCP.

::

    from mcpsync.testing import FakeServer

    server = FakeServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with server, server.client() as client:
        assert client.call_tool("add", {"a": 2, "b": 40}).text == "42"
    server.assert_tool_called("add", a=2, b=40)

:class:`FakeServer` declares tools, resources, resource templates and prompts
as plain functions (and serves skills), speaks both protocol eras, records every request, and
scripts the unhappy paths (slow, failing, silent and crashing servers, and the
server's own sampling, elicitation and roots requests). :class:`Context` is
what a function receives as ``ctx``. :class:`FakeServerMixin` adds
``assertToolCalled`` to ``unittest`` test cases; the pytest plugin
(:mod:`mcpsync.testing.pytest_plugin`) provides the ``fake_mcp_server``
fixture.

``import mcpsync`` does not import this package, and importing this package
loads its parts only when a name is first used (the pytest plugin imports it
in every test run). That first use may come from any thread: Python's import
lock serialises the load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._server import Context as Context
    from ._context import NoAnswer as NoAnswer
    from ._server import FakeTransport as FakeTransport
    from ._recorder import RecordedNotification as RecordedNotification
    from ._recorder import RecordedRequest as RecordedRequest
    from ._server import FakeServer as FakeServer
    from ._unittest import FakeServerMixin as FakeServerMixin
    from .._cassettes import Cassette as Cassette
    from .._cassettes import CassetteError as CassetteError
    from .._cassettes import CassetteMismatch as CassetteMismatch
    from .._cassettes import use_cassette as use_cassette

_LAZY = {
    "Cassette": "_cassettes",
    "CassetteError": "_cassettes",
    "CassetteMismatch": "_cassettes",
    "use_cassette": "_cassettes",
    "Context": "_server",
    "FakeServer": "_server",
    "FakeServerMixin": "_unittest",
    "FakeTransport": "_server",
    "NoAnswer": "_context",
    "RecordedNotification": "_recorder",
    "RecordedRequest": "_recorder",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpsync.testing' has no attribute {name!r}")
    if module == "_cassettes":
        value = getattr(importlib.import_module("mcpsync._cassettes"), name)
    else:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list:  # type: ignore[type-arg]
    return sorted(set(globals()) | set(_LAZY))
