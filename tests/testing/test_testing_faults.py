"""mcpsync.testing: scripted unhappy paths, progress, and the server's own requests (legacy era)."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

from mcpsync import CancelToken, MCPError, RequestCancelled, RequestTimeout, TransportClosed
from mcpsync.testing import Context, FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer("faulty") as fake:
        @fake.tool()
        def add(a: int, b: int) -> int:
            return a + b

        yield fake


class Background:
    """Runs one blocking call on a thread; ``result()`` waits for it (bounded)."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self._outcome: "queue.Queue[Tuple[bool, Any]]" = queue.Queue()
        self._thread = threading.Thread(target=self._run, args=(call,), name="test-background")
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self._outcome.put((True, call()))
        except BaseException as exc:
            self._outcome.put((False, exc))

    def result(self, timeout: float = 10.0) -> Any:
        ok, value = self._outcome.get(timeout=timeout)
        self._thread.join(timeout)
        if not ok:
            raise value
        return value


def test_progress_arrives_in_order_before_the_result(server: FakeServer) -> None:
    sent: List[bool] = []

    @server.tool()
    def countdown(ctx: Context, n: int) -> str:
        for step in range(1, n + 1):
            sent.append(ctx.progress(step, n, f"{n - step} left"))
        return "liftoff"

    seen: List[Tuple[float, Optional[float], Optional[str]]] = []
    with server.client() as client:
        result = client.call_tool("countdown", {"n": 3}, on_progress=lambda *args: seen.append(args))
        assert result.text == "liftoff"
        assert seen == [(1, 3, "2 left"), (2, 3, "1 left"), (3, 3, "0 left")]
        assert client.call_tool("countdown", {"n": 1}).text == "liftoff"
    assert sent == [True, True, True, False]  # without a progress token, progress is not sent


def test_progress_keeps_a_slow_call_alive(server: FakeServer) -> None:
    steps: "queue.Queue[Optional[int]]" = queue.Queue()

    @server.tool()
    def stepwise(ctx: Context) -> str:
        while True:
            step = steps.get(timeout=10)
            if step is None:
                return "done"
            ctx.progress(step)

    seen: "queue.Queue[float]" = queue.Queue()
    with server.client() as client:
        call = Background(lambda: client.call_tool("stepwise", on_progress=lambda p, t, m: seen.put(p),
                                                   reset_timeout_on_progress=True, timeout=2.0))
        for step in range(1, 4):
            steps.put(step)
            assert seen.get(timeout=5) == step
        steps.put(None)
        assert call.result().text == "done"


def test_a_slow_tool_that_times_out_is_told_it_was_cancelled(server: FakeServer) -> None:
    cancelled = threading.Event()

    @server.tool()
    def slow(ctx: Context) -> str:
        if not ctx.sleep(30):
            cancelled.set()
        return "finished"

    with server.client() as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", timeout=0.2)
        assert cancelled.wait(5)
        request = server.wait_for_request("tools/call", tool="slow")
        note = server.wait_for_notification("notifications/cancelled")
        assert note.params == {"requestId": request.id, "reason": "Request timed out"}
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"  # the connection is fine


def test_a_cancel_token_reaches_the_tool_with_its_reason(server: FakeServer) -> None:
    reasons: "queue.Queue[Optional[str]]" = queue.Queue()

    @server.tool()
    def wait_for_cancel(ctx: Context) -> str:
        ctx.wait_cancelled(30)
        reasons.put(ctx.cancel_reason)
        return "ignored"

    token = CancelToken()
    with server.client() as client:
        call = Background(lambda: client.call_tool("wait_for_cancel", cancel=token))
        server.wait_for_request("tools/call", tool="wait_for_cancel")
        token.cancel("user pressed stop")
        with pytest.raises(RequestCancelled, match="user pressed stop"):
            call.result()
        assert reasons.get(timeout=5) == "user pressed stop"


def test_a_tool_that_never_answers(server: FakeServer) -> None:
    @server.tool()
    def silent(ctx: Context) -> str:
        ctx.hang()
        return "unreachable"

    with server.client() as client:
        with pytest.raises(RequestTimeout, match="Request timeout after 200ms"):
            client.call_tool("silent", timeout=0.2)
        server.wait_for_notification("notifications/cancelled")
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"


def test_pings_are_answered_while_a_tool_blocks(server: FakeServer) -> None:
    release = threading.Event()

    @server.tool()
    def blocked() -> str:
        release.wait(10)
        return "released"

    with server.client() as client:
        call = Background(lambda: client.call_tool("blocked"))
        server.wait_for_request("tools/call", tool="blocked")
        client.ping()
        assert client.call_tool("add", {"a": 1, "b": 2}).text == "3"
        release.set()
        assert call.result().text == "released"


def test_tools_run_concurrently(server: FakeServer) -> None:
    both = threading.Barrier(2, timeout=10)

    @server.tool()
    def meet(name: str) -> str:
        both.wait()
        return name

    with server.client() as client:
        first = Background(lambda: client.call_tool("meet", {"name": "first"}))
        second = Background(lambda: client.call_tool("meet", {"name": "second"}))
        assert (first.result().text, second.result().text) == ("first", "second")


def test_hang_at_leaves_one_request_unanswered(server: FakeServer) -> None:
    server.hang_at(1, method="tools/list")
    with server.client() as client:
        with pytest.raises(RequestTimeout):
            client.list_tools(timeout=0.2)
        assert [tool.name for tool in client.list_tools()] == ["add"]


def test_error_at_answers_the_nth_matching_call_with_an_error(server: FakeServer) -> None:
    server.error_at(2, -32000, "busy", data={"retry": True}, tool="add")
    with server.client() as client:
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
        with pytest.raises(MCPError) as raised:
            client.call_tool("add", {"a": 2, "b": 2})
        assert (raised.value.code, raised.value.message, raised.value.data) == (-32000, "busy", {"retry": True})
        assert client.call_tool("add", {"a": 3, "b": 3}).text == "6"
    assert server.calls("add") == [{"a": 1, "b": 1}, {"a": 2, "b": 2}, {"a": 3, "b": 3}]


def test_crash_at_drops_the_connection_at_the_nth_request(server: FakeServer) -> None:
    with server.client() as client:
        server.crash_at(2)  # counting from now: tools/list, then tools/call
        client.list_tools()
        with pytest.raises(TransportClosed, match=r"crashed at request #3 \(tools/call\)"):
            client.call_tool("add", {"a": 1, "b": 2})
        assert not client.connected
        with pytest.raises(TransportClosed):
            client.call_tool("add", {"a": 1, "b": 2})
    assert server.requests[-1].method == "tools/call"


def test_crash_during_the_handshake_fails_the_connect(server: FakeServer) -> None:
    server.crash_at(1, method="initialize")
    with pytest.raises(TransportClosed, match="crashed"):
        server.client(protocol="legacy")


def test_crash_fails_a_call_that_is_waiting(server: FakeServer) -> None:
    @server.tool()
    def forever(ctx: Context) -> str:
        ctx.hang()
        return "unreachable"

    with server.client() as client:
        call = Background(lambda: client.call_tool("forever"))
        server.wait_for_request("tools/call", tool="forever")
        server.crash("the power went out")
        with pytest.raises(TransportClosed, match="the power went out"):
            call.result()


def test_closing_the_client_cancels_running_tools(server: FakeServer) -> None:
    cancelled = threading.Event()

    @server.tool()
    def long(ctx: Context) -> str:
        if ctx.wait_cancelled(30):
            cancelled.set()
        return "late"

    client = server.client()
    call = Background(lambda: client.call_tool("long"))
    server.wait_for_request("tools/call", tool="long")
    client.close()
    with pytest.raises(TransportClosed):
        call.result()
    assert cancelled.is_set()  # close() joined the tool's thread


# -- the server's own requests (legacy: server-to-client JSON-RPC requests) ---------------


def _ask_everything(server: FakeServer) -> None:
    @server.tool()
    def ask(ctx: Context) -> Dict[str, Any]:
        sampled = ctx.sample([{"role": "user", "content": "What is 2+2?"}], max_tokens=5,
                             systemPrompt="Be brief.")
        answer = ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return {"sampled": sampled["content"]["text"], "answer": answer, "roots": ctx.list_roots()}


def test_sampling_elicitation_and_roots_reach_the_client_handlers(server: FakeServer) -> None:
    _ask_everything(server)
    seen: Dict[str, Any] = {}

    def sample(params: Dict[str, Any]) -> Dict[str, Any]:
        seen["sampling"] = params
        return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "4"}}

    def elicit(params: Dict[str, Any]) -> Dict[str, Any]:
        seen["elicitation"] = params
        return {"action": "accept", "content": {"name": "Ada"}}

    with server.client(sampling_handler=sample, elicitation_handler=elicit,
                       roots=[{"uri": "file:///srv/app", "name": "app"}]) as client:
        result = client.call_tool("ask")
    assert result.structured_content == {"sampled": "4", "answer": {"action": "accept", "content": {"name": "Ada"}},
                                         "roots": [{"uri": "file:///srv/app", "name": "app"}]}
    assert seen["sampling"] == {"messages": [{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}],
                                "maxTokens": 5, "systemPrompt": "Be brief."}
    assert seen["elicitation"] == {"message": "Your name?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}


def test_asking_a_client_that_did_not_declare_the_capability_is_an_error(server: FakeServer) -> None:
    _ask_everything(server)
    with server.client() as client:
        with pytest.raises(MCPError) as raised:
            client.call_tool("ask")
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}


def test_a_client_error_answer_raises_in_the_tool(server: FakeServer) -> None:
    @server.tool()
    def ask(ctx: Context) -> str:
        try:
            ctx.sample("hi")
        except MCPError as exc:
            return f"refused: {exc.code}"
        return "sampled"

    def refuse(params: Dict[str, Any]) -> Dict[str, Any]:
        raise MCPError(-1, "User rejected sampling")

    with server.client(sampling_handler=refuse, protocol="legacy") as client:
        assert client.call_tool("ask").text == "refused: -1"


def test_a_client_that_does_not_answer_times_the_tool_out() -> None:
    release = threading.Event()
    with FakeServer(request_timeout=0.2) as server:
        @server.tool()
        def ask(ctx: Context) -> str:
            return str(ctx.sample("hi"))

        def stuck(params: Dict[str, Any]) -> Dict[str, Any]:
            release.wait(10)
            return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "late"}}

        with server.client(sampling_handler=stuck, protocol="legacy") as client:
            result = client.call_tool("ask")
            release.set()
    assert result.is_error
    assert result.text == "The client did not answer sampling/createMessage within 0.2s"


def test_cancelling_a_call_cancels_the_server_request_it_waits_on(server: FakeServer) -> None:
    ended = threading.Event()
    release = threading.Event()

    @server.tool()
    def ask(ctx: Context) -> str:
        try:
            return str(ctx.sample("hi"))
        finally:
            ended.set()

    def slow_model(params: Dict[str, Any]) -> Dict[str, Any]:
        release.wait(10)
        return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "late"}}

    token = CancelToken()
    with server.client(sampling_handler=slow_model, protocol="legacy") as client:
        call = Background(lambda: client.call_tool("ask", cancel=token))
        server.wait_for_request("tools/call", tool="ask")
        token.cancel("changed my mind")
        with pytest.raises(RequestCancelled):
            call.result()
        assert ended.wait(5)
        release.set()
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
