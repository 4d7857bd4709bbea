"""Every HTTP transport, and the Manager, through the fault proxy: each call ends by its deadline, typed.

For each fault (tests/faults/proxy.py) and each way of reaching a real server (the official SDK
server over Streamable HTTP in the legacy era with JSON and SSE answers and in the 2026-07-28 era,
over the legacy HTTP+SSE transport, and the TypeScript server-everything), a call:

* ends by its timeout, with the right result or one typed error (a TransportError family
  member or RequestTimeout; never a raw requests/urllib3 exception);
* runs the tool at most once, except where the 2026-07-28 spec resends a broken stream;
* leaves no thread, socket or descriptor (the ``no_leaks`` fixture);
* and once the proxy is healed, the next call succeeds.

The table of outcomes is in docs/reliability.md.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy, RequestTimeout, TransportClosed, TransportError
from mcpsync.exceptions import StreamBroken
from mcpsync.transports import SSETransport, StreamableHTTPTransport

from ..conftest import LogWatch, until
from .conftest import OUTCOMES, RUNS, TS_MISSING
from .proxy import FaultProxy

pytestmark = pytest.mark.faults

#: The call's timeout in the fault tests; a fault that holds the answer back ends the call at it.
DEADLINE = 2.0
#: How late past its deadline a call may end on two busy cores (thread wake-ups, a close).
SLACK = 1.5
#: How long the tool works: the fault lands while it runs.
WORK = 0.4
QUICK = ReconnectPolicy(initial_delay=0.05, max_delay=0.2, jitter=0.0, max_attempts=1000, window=60)
TS_TOOL = "trigger-long-running-operation"


@dataclass
class Row:
    """One way to reach a server: what to connect to, how, and how to count the tool's runs."""

    name: str
    upstream: str  # "json", "sse", "http+sse" (the SDK servers) or "ts"
    protocol: str = "legacy"
    modern: bool = False

    @property
    def path(self) -> str:
        return "/sse" if self.upstream == "http+sse" else "/mcp"

    @property
    def target(self) -> Optional[bytes]:
        """The connection a response fault hits: HTTP+SSE answers a POST on its GET stream."""
        return b"GET /sse" if self.upstream == "http+sse" else None

    def transport(self, proxy: FaultProxy) -> Any:
        if self.upstream == "http+sse":
            return SSETransport(proxy.url(self.path))
        return StreamableHTTPTransport(proxy.url(self.path))

    def call(self, tag: str, seconds: float = WORK) -> "tuple[str, Dict[str, Any]]":
        if self.upstream == "ts":
            return TS_TOOL, {"duration": seconds, "steps": 1}
        return "work", {"tag": tag, "seconds": seconds}

    def runs(self, tag: str, proxy: FaultProxy) -> int:
        """How many times the server ran (SDK: it counts) or may have run (TS: the proxy counts) the call."""
        return proxy.requests(TS_TOOL.encode()) if self.upstream == "ts" else RUNS[tag]

    def answer(self, tag: str) -> str:
        return "Long running operation completed" if self.upstream == "ts" else f"{tag} ran 1"


ROWS = [
    Row("legacy-json", "json"),
    Row("legacy-sse", "sse"),
    Row("modern-json", "json", "modern", modern=True),
    Row("modern-sse", "sse", "modern", modern=True),
    Row("http+sse", "http+sse"),
    Row("typescript", "ts"),
]

#: fault name -> how the proxy is switched (before the call for refuse and black hole, which need no trigger)
FAULTS: Dict[str, Callable[[FaultProxy, Row], Any]] = {
    "latency": lambda proxy, row: proxy.latency(0.15),
    "stall": lambda proxy, row: proxy.stall(target=row.target),
    "cut-head": lambda proxy, row: proxy.cut(12, target=row.target, body=False),
    "cut-body": lambda proxy, row: proxy.cut(5, target=row.target),
    "reset": lambda proxy, row: proxy.reset(target=row.target),
    "refuse": lambda proxy, row: proxy.refuse(),
    "black-hole": lambda proxy, row: proxy.black_hole(),
}


def upstream_port(row: Row, fault_upstreams: Dict[str, Any], request: pytest.FixtureRequest) -> int:
    if row.upstream == "ts":
        from urllib.parse import urlsplit

        url = request.getfixturevalue("ts_upstream")
        if url is None:
            pytest.skip(TS_MISSING[0])
        return int(urlsplit(url).port or 0)
    return int(fault_upstreams[row.upstream].port)


@dataclass
class Outcome:
    elapsed: float
    result: Any = None
    error: Optional[BaseException] = None


def timed(fn: Callable[[], Any]) -> Outcome:
    started = time.monotonic()
    try:
        result = fn()
    except Exception as exc:  # noqa: BLE001 - the test judges what came out
        return Outcome(time.monotonic() - started, error=exc)
    return Outcome(time.monotonic() - started, result=result)


def record(test: str, row: Row, fault: str, outcome: Outcome, runs: int) -> None:
    error = outcome.error
    shown = "result" if error is None else type(error).__name__
    OUTCOMES.append((test, row.name, fault, shown, outcome.elapsed, runs))


def typed(outcome: Outcome) -> None:
    """The call ended by its deadline, with a result or one of the typed errors (chained, not raw)."""
    assert outcome.elapsed <= DEADLINE + SLACK, f"the call took {outcome.elapsed:.2f}s (deadline {DEADLINE}s)"
    error = outcome.error
    if error is None:
        return
    assert isinstance(error, (TransportError, RequestTimeout)), f"untyped error {type(error).__module__}." \
        f"{type(error).__qualname__}: {error}"
    text = str(error)
    for raw in ("urllib3.", "requests.exceptions", "HTTPConnectionPool(", "Max retries exceeded", "<urllib3"):
        assert raw not in text, f"the message shows a library's raw exception: {text}"


def lost(fault: str, outcome: Outcome) -> None:
    """A broken or refused connection is the one family, TransportClosed, saying whether the call may have run."""
    error = outcome.error
    if error is None or fault not in ("cut-head", "cut-body", "reset", "refuse", "outage") or not FAMILY_UNIFIED:
        return
    assert isinstance(error, TransportClosed), f"{type(error).__name__} is not a TransportClosed: {error}"
    reached = getattr(error, "may_have_reached_server", None)
    if reached is not None:
        assert reached is (fault != "refuse"), f"may_have_reached_server={reached} under {fault}"


def expected_runs(fault: str, row: Row) -> "tuple[int, int]":
    """(least, most) runs of the call the server may make under ``fault``."""
    if fault in ("refuse", "black-hole"):
        return 0, 0  # nothing reached the server
    # A cut or a reset may land before the server started the tool (it then sees its client gone): 0 runs.
    if fault in ("cut-head", "cut-body", "reset"):
        return 0, 2 if row.modern else 1  # 2026-07-28: a broken response stream is sent again, once, as a new request
    return 1, 1


#: Whether "one event, one exception" (issue 22 item 2) has landed: StreamBroken is then a TransportError.
FAMILY_UNIFIED = issubclass(StreamBroken, TransportError)


def known_defect(fault: str, row: Row) -> Optional[str]:
    """The reason a cell fails while issue 22 item 2 ("one event, one exception") is open; None if it passes."""
    if FAMILY_UNIFIED or row.upstream == "http+sse":
        return None
    if fault == "cut-head":
        return ("issue 22 item 2: a response cut inside its HTTP head raises ProtocolError('No response received "
                "for request ID n'), outside the TransportError family")
    if fault == "cut-body" and row.upstream in ("sse", "ts") and not row.modern:
        return ("issue 22 item 2: a legacy SSE response stream cut before its first event raises StreamBroken, a "
                "ProtocolError outside the TransportError family")
    return None


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_a_client_call_under_a_fault_ends_by_its_deadline_typed_and_the_client_recovers(
        row: Row, fault: str, fault_upstreams: Dict[str, Any], make_proxy: Callable[[int], FaultProxy],
        request: pytest.FixtureRequest) -> None:
    defect = known_defect(fault, row)
    if defect:
        request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
    proxy = make_proxy(upstream_port(row, fault_upstreams, request))
    tag = f"t-{uuid.uuid4().hex[:8]}"
    name, arguments = row.call(tag)
    client = mcpsync.Client(row.transport(proxy), protocol=row.protocol, timeout=10)
    try:
        client.connect()
        before = row.runs(tag, proxy)
        FAULTS[fault](proxy, row)
        outcome = timed(lambda: client.call_tool(name, arguments, timeout=DEADLINE))
        record("client", row, fault, outcome, row.runs(tag, proxy) - before)
        typed(outcome)
        least, most = expected_runs(fault, row)
        if fault == "latency":
            assert outcome.error is None and row.answer(tag) in outcome.result.text
        elif fault in ("stall", "black-hole"):
            assert isinstance(outcome.error, RequestTimeout), outcome.error
            assert outcome.elapsed >= DEADLINE - 0.1
        elif fault == "refuse":
            assert isinstance(outcome.error, TransportError) and outcome.elapsed < DEADLINE, outcome.error
        elif row.upstream != "ts":  # cut, reset: the server's answer is lost (TS resumes its stream: it may win)
            assert outcome.error is not None, outcome.result
        runs = row.runs(tag, proxy) - before
        assert least <= runs <= most, f"the server ran the call {runs} times under {fault}"
        lost(fault, outcome)
        proxy.heal()
        again = f"a-{uuid.uuid4().hex[:8]}"
        name, arguments = row.call(again, 0.0)
        if not client.transport.connected and row.upstream == "http+sse":
            # HTTP+SSE: the GET stream is the session; once it broke the client is closed (a Manager reconnects)
            client.close()
            client = mcpsync.Client(row.transport(proxy), protocol=row.protocol, timeout=10).connect()
        healed = timed(lambda: client.call_tool(name, arguments, timeout=10))
        assert healed.error is None, f"after healing: {healed.error!r}"
        assert row.answer(again) in healed.result.text
    finally:
        client.close()


MANAGER_ROWS = [row for row in ROWS if row.name in ("legacy-json", "legacy-sse", "modern-sse", "http+sse", "typescript")]


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("row", MANAGER_ROWS, ids=lambda row: row.name)
def test_a_manager_call_under_a_fault_ends_by_its_deadline_typed_runs_once_and_recovers(
        row: Row, fault: str, fault_upstreams: Dict[str, Any], make_proxy: Callable[[int], FaultProxy],
        request: pytest.FixtureRequest) -> None:
    defect = known_defect(fault, row)
    if defect:
        request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
    proxy = make_proxy(upstream_port(row, fault_upstreams, request))
    kind = "sse" if row.upstream == "http+sse" else "http"
    config = {"mcpServers": {"s": {"type": kind, "url": proxy.url(row.path)}}}
    tag = f"m-{uuid.uuid4().hex[:8]}"
    name, arguments = row.call(tag)
    qualified = "mcp_s_" + name.replace("-", "_")
    with Manager(config, cache=False, reconnect=QUICK, timeout=10,
                 client_options={"protocol": row.protocol}) as manager:
        qualified = next(tool.qualified_name for tool in manager.tools() if tool.name == name)
        before = row.runs(tag, proxy)
        FAULTS[fault](proxy, row)
        outcome = timed(lambda: manager.call_tool(qualified, arguments, timeout=DEADLINE))
        record("manager", row, fault, outcome, row.runs(tag, proxy) - before)
        typed(outcome)
        least, most = expected_runs(fault, row)
        if fault == "latency":
            assert outcome.error is None and row.answer(tag) in outcome.result.text
        elif fault == "black-hole":
            assert isinstance(outcome.error, RequestTimeout), outcome.error
        runs = row.runs(tag, proxy) - before
        assert least <= runs <= most, f"the server ran the call {runs} times under {fault}"
        if fault != "refuse":  # a manager waits out a refused connection: RequestTimeout at the deadline
            lost(fault, outcome)
        proxy.heal()
        again = f"a-{uuid.uuid4().hex[:8]}"
        name, arguments = row.call(again, 0.0)
        healed = timed(lambda: manager.call_tool(qualified, arguments, timeout=15))
        assert healed.error is None, f"after healing: {healed.error!r}"
        assert row.answer(again) in healed.result.text


# -- an outage mid-call: the server goes away while it runs the tool, and comes back -------------------------

OUTAGE = 2.0  # how long connects are refused (longer than the 1 s before a legacy stream is resumed)
OUTAGE_DEADLINE = 6.0


def resume_refused(logs: LogWatch) -> bool:
    """The client tried to resume a broken legacy stream (GET with Last-Event-ID) and was refused."""
    messages = logs.messages("mcpsync")
    resumed = [i for i, text in enumerate(messages) if text.startswith("Resuming the stream of request")]
    return bool(resumed) and any("connection refused" in text for text in messages[resumed[0]:])


def outage_mid_call(proxy: FaultProxy, row: Row, tag: str, call: Callable[[], Any], progressed: threading.Event,
                    logs: LogWatch) -> Outcome:
    """Start ``call``; once the server has the request (TS: and its first progress event, which carries an SSE event
    id, came back), refuse every connection (open ones reset), until OUTAGE seconds passed, the call ended, or
    the client's resume of the stream was refused (the server then comes back at once: the moment a client that
    took the refused resume for "never sent" would send the call again)."""
    outcome: List[Outcome] = []
    thread = threading.Thread(target=lambda: outcome.append(timed(call)), name="test-outage-call")
    thread.start()
    try:
        until(lambda: row.runs(tag, proxy) >= 1 or bool(outcome), 10)
        if row.upstream == "ts":
            progressed.wait(10)
        proxy.refuse()
        ended = time.monotonic() + OUTAGE
        try:
            until(lambda: bool(outcome) or resume_refused(logs) or time.monotonic() > ended, OUTAGE + 5)
        finally:
            proxy.heal()
    finally:
        thread.join(OUTAGE_DEADLINE + SLACK + 5)
    assert outcome, "the call did not end"
    return outcome[0]


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
@pytest.mark.parametrize("via", ["client", "manager"])
def test_a_server_gone_mid_call_ends_the_call_typed_runs_it_once_and_is_reached_again(
        row: Row, via: str, fault_upstreams: Dict[str, Any], make_proxy: Callable[[int], FaultProxy],
        request: pytest.FixtureRequest, logs: LogWatch) -> None:
    if row.upstream == "sse" and not row.modern and not FAMILY_UNIFIED:
        request.applymarker(pytest.mark.xfail(strict=True, reason=(
            "issue 22 item 2: a legacy SSE response stream broken before its first event raises StreamBroken, a "
            "ProtocolError outside the TransportError family")))
    proxy = make_proxy(upstream_port(row, fault_upstreams, request))
    tag = f"o-{uuid.uuid4().hex[:8]}"
    name, arguments = row.call(tag, 2.0)
    progressed = threading.Event()
    if row.upstream == "ts":
        arguments["steps"] = 8  # a progress event every 0.25 s: the stream has event ids before it breaks

    def on_progress(progress: float, total: Optional[float], message: Optional[str]) -> None:
        progressed.set()

    again = f"a-{uuid.uuid4().hex[:8]}"
    after_name, after_arguments = row.call(again, 0.0)
    if via == "client":
        client = mcpsync.Client(row.transport(proxy), protocol=row.protocol, timeout=10)
        try:
            client.connect()
            outcome = outage_mid_call(proxy, row, tag,
                                      lambda: client.call_tool(name, arguments, timeout=OUTAGE_DEADLINE,
                                                               on_progress=on_progress), progressed, logs)
            runs = row.runs(tag, proxy)
            if not client.transport.connected and row.upstream == "http+sse":
                client.close()  # HTTP+SSE: the stream was the session (see the fault matrix above)
                client = mcpsync.Client(row.transport(proxy), protocol=row.protocol, timeout=10).connect()
            healed = timed(lambda: client.call_tool(after_name, after_arguments, timeout=10))
        finally:
            client.close()
    else:
        kind = "sse" if row.upstream == "http+sse" else "http"
        config = {"mcpServers": {"s": {"type": kind, "url": proxy.url(row.path)}}}
        with Manager(config, cache=False, reconnect=QUICK, timeout=10,
                     client_options={"protocol": row.protocol}) as manager:
            qualified = next(tool.qualified_name for tool in manager.tools() if tool.name == name)
            outcome = outage_mid_call(proxy, row, tag,
                                      lambda: manager.call_tool(qualified, arguments, timeout=OUTAGE_DEADLINE,
                                                                on_progress=on_progress), progressed, logs)
            runs = row.runs(tag, proxy)
            healed = timed(lambda: manager.call_tool(qualified, after_arguments, timeout=15))
    record(via, row, "outage", outcome, runs)
    assert outcome.elapsed <= OUTAGE_DEADLINE + SLACK, f"the call took {outcome.elapsed:.2f}s"
    assert outcome.error is not None, "the server went away mid-call: its answer cannot have come"
    assert isinstance(outcome.error, (TransportError, RequestTimeout)), repr(outcome.error)
    lost("outage", outcome)
    assert runs == 1, f"the server ran the call {runs} times: it was sent again after it may have been run"
    assert healed.error is None, f"after the outage: {healed.error!r}"
    assert row.answer(again) in healed.result.text
