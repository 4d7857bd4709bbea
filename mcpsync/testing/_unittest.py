"""FakeServerMixin: FakeServer assertions in unittest's camelCase style.

The assertions read the server's records on the test's own thread and never
block; a failure is raised as the test case's ``failureException``.
"""

from __future__ import annotations

import unittest
import os
from typing import TYPE_CHECKING, Any, Optional, Union, cast

from ._server import FakeServer

if TYPE_CHECKING:
    from .._cassettes import Cassette

__all__ = ["FakeServerMixin"]


class FakeServerMixin:
    """Mix into a :class:`unittest.TestCase` for ``assertToolCalled`` and friends.

    ::

        class WeatherTests(FakeServerMixin, unittest.TestCase):
            def setUp(self):
                server = self.useFakeServer(FakeServer("weather"))
                server.add_tool(forecast)
                self.client = server.client()

            def test_asks_for_oslo(self):
                my_app.show_weather(self.client, "Oslo")
                self.assertToolCalled("forecast", city="Oslo")

    The assertions check :attr:`fake_server`, which :meth:`useFakeServer`
    sets (or set it yourself). Failures raise the test case's
    ``failureException`` like every other ``assert*`` method.
    """

    fake_server: Optional[FakeServer] = None

    def use_cassette(self, path: "Union[str, os.PathLike[str]]", **options: Any) -> "Cassette":
        """Run the rest of this test (and its cleanups after this one) inside a cassette.

        ``options`` are :func:`mcpsync.testing.use_cassette`'s. Call it in ``setUp`` (or at the
        start of a test); the cassette is closed (and a recording written) when the test ends,
        after the cleanups registered later, such as a client's close.
        """
        from .._cassettes import use_cassette

        cassette = use_cassette(path, **options)
        cassette.__enter__()
        cast(unittest.TestCase, self).addCleanup(cassette.__exit__, None, None, None)
        return cassette

    def useFakeServer(self, server: FakeServer) -> FakeServer:
        """Make ``server`` the one the assertions check, and close it when the test ends."""
        self.fake_server = server
        cast(unittest.TestCase, self).addCleanup(server.close)
        return server

    def assertToolCalled(self, name: str, /, **arguments: Any) -> None:
        """Fail unless tool ``name`` was called (with ``arguments`` among its arguments, if given)."""
        self._check(lambda server: server.assert_tool_called(name, **arguments))

    def assertToolNotCalled(self, name: str) -> None:
        """Fail if tool ``name`` ran (a call refused before it ran, by the input schema say, passes)."""
        self._check(lambda server: server.assert_tool_not_called(name))

    def assertToolCallCount(self, name: str, count: int) -> None:
        """Fail unless tool ``name`` ran exactly ``count`` times (refused calls are not counted)."""

        def check(server: FakeServer) -> None:
            calls = server.calls(name)
            if len(calls) != count:
                raise AssertionError(f"Tool {name!r} was called {len(calls)} time(s), not {count}: {calls!r}")

        self._check(check)

    def _check(self, assertion: Any) -> None:
        case = cast(unittest.TestCase, self)
        server = self.fake_server
        if server is None:
            raise case.failureException("No fake server: call self.useFakeServer(server) in setUp")
        try:
            assertion(server)
        except AssertionError as exc:
            raise case.failureException(str(exc)) from None
