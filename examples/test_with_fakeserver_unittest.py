"""Testing code that uses MCP, unittest style, with mcpsync.testing.FakeServer.

    python examples/test_with_fakeserver_unittest.py
    python -m unittest discover -s examples -p "test_with_fakeserver_unittest.py"

``FakeServerMixin`` adds ``assertToolCalled`` and friends to a TestCase, and
``useFakeServer`` closes the server (and the clients it made) after each test.
The code under test is ``weather_report`` below.
"""

import threading
import unittest
from typing import Any, Dict

import mcpsync
from mcpsync.testing import Context, FakeServer, FakeServerMixin

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


# -- the tests -------------------------------------------------------------------------------------


class WeatherReportTests(FakeServerMixin, unittest.TestCase):
    def setUp(self) -> None:
        server = self.useFakeServer(FakeServer("weather"))

        @server.tool()
        def forecast(city: str, days: int = 1) -> Dict[str, Any]:
            """The forecast for a city."""
            if city == "Atlantis":
                raise LookupError("unknown city")  # a failing tool returns an isError result
            return {"summary": "sunny", "high": 21}

        self.client = server.client()  # closed with the server

    def test_report_for_a_known_city(self) -> None:
        self.assertEqual(weather_report(self.client, "Oslo"), "Oslo: sunny, high of 21 C")
        self.assertToolCalled("forecast", city="Oslo")
        self.assertToolCallCount("forecast", 1)

    def test_report_when_the_tool_fails(self) -> None:
        self.assertEqual(weather_report(self.client, "Atlantis"), "Atlantis: no forecast (unknown city)")

    def test_nothing_is_asked_before_the_report(self) -> None:
        self.assertToolNotCalled("forecast")

    def test_report_when_the_server_is_slow(self) -> None:
        server = self.fake_server
        assert server is not None

        @server.tool()
        def forecast(ctx: Context, city: str) -> str:  # replaces the fast one
            ctx.sleep(30)  # wakes early when the client gives up and cancels
            return "too late"

        self.assertEqual(weather_report(self.client, "Oslo"), "Oslo: the weather service is slow, try again later")
        server.wait_for_notification("notifications/cancelled")

    def test_report_when_the_server_crashes(self) -> None:
        assert self.fake_server is not None
        self.fake_server.crash_at(1, tool="forecast")
        with self.assertRaisesRegex(mcpsync.TransportClosed, "crashed"):
            weather_report(self.client, "Oslo")

    def test_the_client_hears_when_the_tools_change(self) -> None:
        server = self.fake_server
        assert server is not None
        # Either era: a legacy session is told directly, a 2026-07-28 client on the
        # subscriptions/listen stream that its list_changed handler opened.
        for client in (self.client, server.client(protocol="legacy")):
            with self.subTest(modern=client.modern):
                changed = threading.Event()
                client.on_notification("notifications/tools/list_changed", lambda params: changed.set())
                server.add_tool(lambda: "rain", name="nowcast")
                self.assertTrue(changed.wait(5))

    def test_every_request_is_recorded(self) -> None:
        weather_report(self.client, "Oslo")
        assert self.fake_server is not None
        # server.client() connects as connect() does: a server/discover probe finds this dual-era
        # fake speaks 2026-07-28, so there is no initialize (client(protocol="legacy") would send one).
        self.assertEqual([r.method for r in self.fake_server.requests], ["server/discover", "tools/call"])


if __name__ == "__main__":
    unittest.main()
