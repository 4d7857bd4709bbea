"""pytest plugin: the ``fake_mcp_server`` fixture.

Registered through the ``pytest11`` entry point, so pytest loads it in every
test run of an environment where mcpsync is installed. It therefore imports
nothing at load time beyond pytest itself (and the ``mcpsync`` package that
contains it, which is light); :mod:`mcpsync.testing` is imported only when a
test uses the fixture. Turn it off with ``-p no:mcpsync``.

::

    def test_reads_the_forecast(fake_mcp_server):
        @fake_mcp_server.tool()
        def forecast(city: str) -> str:
            return "sunny"

        with fake_mcp_server.client() as client:
            assert my_app.weather(client, "Oslo") == "sunny"
        assert fake_mcp_server.calls("forecast") == [{"city": "Oslo"}]

Options for the server go in a marker:
``@pytest.mark.fake_mcp_server(name="weather", page_size=2)``. After the test
the fixture closes the server, which closes its clients and joins its
connections' threads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import pytest

if TYPE_CHECKING:
    from mcpsync.testing import FakeServer

__all__ = ["fake_mcp_server", "pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_mcp_server(**options): FakeServer options for the fake_mcp_server fixture")


@pytest.fixture
def fake_mcp_server(request: pytest.FixtureRequest) -> "Iterator[FakeServer]":
    """A :class:`~mcpsync.testing.FakeServer` for this test, closed (with its clients) afterwards."""
    from mcpsync.testing import FakeServer

    marker = request.node.get_closest_marker("fake_mcp_server")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    options.setdefault("name", request.node.name)
    server = FakeServer(**options)
    try:
        yield server
    finally:
        server.close()
