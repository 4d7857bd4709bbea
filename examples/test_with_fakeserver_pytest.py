"""Testing code that uses MCP, pytest style, with mcpsync.testing.FakeServer.

    python -m pytest examples/test_with_fakeserver_pytest.py

The ``fake_mcp_server`` fixture comes from mcpsync's pytest plugin, which
pytest loads by itself once mcpsync is installed. The code under test is
``weather_report`` below; the fake server plays the weather server it talks to,
in memory, with no subprocess and no network.
"""

from typing import Any, Dict

import pytest

import mcpsync
from mcpsync.testing import Context, FakeServer

# -- the code under test ------------------------------------------------------------------------


def weather_report(client: mcpsync.Client, city: str) -> str:
    """Ask the weather server for a forecast and phrase it; never crash on a bad answer."""
    try:
        result = client.call_tool("forecast", {"city": city}, timeout=1)
    except mcpsync.RequestTimeout:
        return f"{city}: the weather service is slow, try again later"
    if result.is_error:
        return f"{city}: no forecast ({result.text})"
    forecast = result.structured_content
    return f"{city}: {forecast['summary']}, high of {forecast['high']} C"


# -- the fake weather server --------------------------------------------------------------------


@pytest.fixture
def weather(fake_mcp_server: FakeServer) -> FakeServer:
    """The fixture's FakeServer with the one tool our app calls (closed by the fixture)."""

    @fake_mcp_server.tool()
    def forecast(city: str, days: int = 1) -> Dict[str, Any]:
        """The forecast for a city."""
        if city == "Atlantis":
            raise LookupError("unknown city")  # a failing tool returns an isError result
        return {"summary": "sunny", "high": 21}

    return fake_mcp_server


# -- the tests -------------------------------------------------------------------------------------


def test_report_for_a_known_city(weather: FakeServer) -> None:
    with weather.client() as client:
        assert weather_report(client, "Oslo") == "Oslo: sunny, high of 21 C"
    # What did the app ask for? Every request is recorded.
    assert weather.calls("forecast") == [{"city": "Oslo"}]
    weather.assert_tool_called("forecast", city="Oslo")


def test_report_when_the_tool_fails(weather: FakeServer) -> None:
    with weather.client() as client:
        assert weather_report(client, "Atlantis") == "Atlantis: no forecast (unknown city)"


def test_report_when_the_server_is_slow(fake_mcp_server: FakeServer) -> None:
    @fake_mcp_server.tool()
    def forecast(ctx: Context, city: str) -> str:
        ctx.sleep(30)  # wakes early when the client gives up and cancels
        return "too late"

    with fake_mcp_server.client() as client:
        assert weather_report(client, "Oslo") == "Oslo: the weather service is slow, try again later"
    # The client told the server it gave up.
    fake_mcp_server.wait_for_notification("notifications/cancelled")


def test_report_when_the_server_crashes(weather: FakeServer) -> None:
    weather.crash_at(1, tool="forecast")
    with weather.client() as client:
        with pytest.raises(mcpsync.TransportClosed, match="crashed"):
            weather_report(client, "Oslo")


def test_a_tool_that_asks_the_client_to_sample(fake_mcp_server: FakeServer) -> None:
    @fake_mcp_server.tool()
    def summarize(ctx: Context, text: str) -> str:
        reply = ctx.sample(f"Summarize: {text}", max_tokens=50)  # a request from server to client
        return reply["content"]["text"]

    def model(params: Dict[str, Any]) -> Dict[str, Any]:
        return {"role": "assistant", "model": "test-model", "content": {"type": "text", "text": "Short."}}

    with fake_mcp_server.client(sampling_handler=model) as client:
        assert client.call_tool("summarize", {"text": "A long story."}).text == "Short."


@pytest.mark.fake_mcp_server(name="paged", page_size=2)
def test_the_marker_configures_the_server(fake_mcp_server: FakeServer) -> None:
    def noop() -> None:
        return None

    for name in ("a", "b", "c"):
        fake_mcp_server.add_tool(noop, name=name)
    with fake_mcp_server.client() as client:
        assert client.server_info is not None and client.server_info.name == "paged"
        assert [tool.name for tool in client.list_tools()] == ["a", "b", "c"]  # two pages


def test_without_the_fixture() -> None:
    # A FakeServer is an ordinary object too: a with block closes it and its clients.
    with FakeServer("weather") as server:
        server.add_tool(lambda city: {"summary": "rain", "high": 9}, name="forecast",
                        input_schema={"type": "object", "properties": {"city": {"type": "string"}}})
        assert weather_report(server.client(), "Bergen") == "Bergen: rain, high of 9 C"
