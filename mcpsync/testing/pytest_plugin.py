"""pytest plugin: the ``fake_mcp_server`` fixture and the ``mcp_cassette`` marker.

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

A test marked ``@pytest.mark.mcp_cassette`` runs inside a cassette
(:func:`mcpsync.testing.use_cassette`): ``cassettes/<test name>.jsonl`` next to the test
file (``tests/cassettes/`` for tests in ``tests/``), or ``cassettes/<name>.jsonl`` with
``@pytest.mark.mcp_cassette("name")``. The marker's keywords are ``use_cassette``'s
(``record_mode=``, ``match_on=``, ``filter_headers=``, ``filter_params=``);
``pytest --mcp-record-mode=all`` (or ``once``, ``none``, ``new_episodes``) overrides
every marker's record mode. The ``mcp_cassette`` fixture is the active
:class:`~mcpsync.testing.Cassette` (None in an unmarked test).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import pytest

if TYPE_CHECKING:
    from mcpsync.testing import Cassette, FakeServer

__all__ = ["fake_mcp_server", "mcp_cassette", "pytest_addoption", "pytest_configure"]

_RECORD_MODES = ("once", "none", "all", "new_episodes")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcpsync")
    group.addoption("--mcp-record-mode", action="store", default=None, choices=_RECORD_MODES,
                    help="record mode of every @pytest.mark.mcp_cassette test (overrides the marker's)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fake_mcp_server(**options): FakeServer options for the fake_mcp_server fixture")
    config.addinivalue_line(
        "markers", "mcp_cassette(name=None, **options): run the test inside an MCP cassette "
                   "(cassettes/<name or test name>.jsonl next to the test file; options as use_cassette's)")


def _cassette_path(request: pytest.FixtureRequest, name: Optional[str]) -> Path:
    if not name:
        name = _UNSAFE.sub("_", request.node.name).strip("_")
    if not name.endswith(".jsonl"):
        name += ".jsonl"
    return Path(str(request.node.path)).parent / "cassettes" / name


@pytest.fixture(autouse=True)
def mcp_cassette(request: pytest.FixtureRequest) -> "Iterator[Optional[Cassette]]":
    """The cassette of a test marked ``mcp_cassette``, active for the whole test; None otherwise."""
    marker = request.node.get_closest_marker("mcp_cassette")
    if marker is None:
        yield None
        return
    from mcpsync.testing import use_cassette

    options: dict[str, Any] = dict(marker.kwargs)
    name = options.pop("name", None) or (marker.args[0] if marker.args else None)
    mode = request.config.getoption("--mcp-record-mode", default=None)
    if mode:
        options["record_mode"] = mode
    with use_cassette(_cassette_path(request, name), **options) as cassette:
        yield cassette


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
