"""The fault proxy itself, with plain sockets: each fault does what the suite's table says it does."""

from __future__ import annotations

import socket
import threading
from typing import Callable, Iterator, List

import pytest

from .proxy import FaultProxy

pytestmark = pytest.mark.faults


class Echo:
    """A line server on 127.0.0.1: answers each chunk with ``ok:<chunk>``; records what it got."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.02)  # a blocked accept() is not woken by close(): look at the flag instead
        self.stopping = threading.Event()
        self.port = self.listener.getsockname()[1]
        self.got: List[bytes] = []
        self.conns: List[socket.socket] = []
        self.threads: List[threading.Thread] = []
        self.acceptor = threading.Thread(target=self._accept, name="test-echo", daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            conn.settimeout(None)
            self.conns.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), name="test-echo-conn", daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                self.got.append(data)
                conn.sendall(b"ok:" + data)
        except OSError:
            return

    def stop(self) -> None:
        self.stopping.set()
        self.acceptor.join(5)
        self.listener.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def echo_proxy(make_proxy: Callable[[int], FaultProxy]) -> Iterator[FaultProxy]:
    server = Echo()
    yield make_proxy(server.port)
    server.stop()


def connect(proxy: FaultProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
    return sock


def test_it_forwards_both_ways_and_counts_what_reached_the_server(echo_proxy: FaultProxy) -> None:
    with connect(echo_proxy) as sock:
        sock.sendall(b'"tools/call"')
        assert sock.recv(100) == b'ok:"tools/call"'
    assert echo_proxy.requests(b"tools/call") == 1


def test_a_reset_is_an_rst_and_a_cut_a_fin_after_n_bytes(echo_proxy: FaultProxy) -> None:
    echo_proxy.reset()
    with connect(echo_proxy) as sock:
        sock.sendall(b'"tools/call"')
        with pytest.raises(ConnectionResetError):
            sock.recv(100)
    echo_proxy.cut(4, body=False)
    with connect(echo_proxy) as sock:
        sock.sendall(b'"tools/call"')
        received = b""
        while True:
            chunk = sock.recv(100)
            if not chunk:
                break  # FIN, not RST
            received += chunk
        assert received == b'ok:"'


def test_a_stall_holds_the_answer_until_healed_and_a_black_hole_drops_the_request(echo_proxy: FaultProxy) -> None:
    echo_proxy.stall()
    with connect(echo_proxy) as sock:
        sock.settimeout(0.3)
        sock.sendall(b'"tools/call"')
        with pytest.raises(socket.timeout):
            sock.recv(100)
        echo_proxy.heal()
        sock.settimeout(5)
        assert sock.recv(100) == b'ok:"tools/call"'
    echo_proxy.black_hole()
    with connect(echo_proxy) as sock:
        sock.settimeout(0.3)
        sock.sendall(b"lost")
        with pytest.raises(socket.timeout):
            sock.recv(100)
    assert echo_proxy.requests(b"lost") == 0


def test_refused_until_healed_on_the_same_port(echo_proxy: FaultProxy) -> None:
    port = echo_proxy.port
    echo_proxy.refuse()
    with pytest.raises(ConnectionRefusedError):
        connect(echo_proxy)
    echo_proxy.heal()
    assert echo_proxy.port == port
    with connect(echo_proxy) as sock:
        sock.sendall(b"back")
        assert sock.recv(100) == b"ok:back"


def test_a_rejected_connection_is_reset_before_anything_reaches_the_server(echo_proxy: FaultProxy) -> None:
    echo_proxy.reject()
    with pytest.raises(ConnectionResetError):  # at the connect, the send or the read: whichever the RST meets
        with connect(echo_proxy) as sock:
            sock.sendall(b'"tools/call"')
            sock.recv(100)
    assert echo_proxy.requests(b"tools/call") == 0
    echo_proxy.heal()
    with connect(echo_proxy) as sock:
        sock.sendall(b"back")
        assert sock.recv(100) == b"ok:back"


def test_drop_closes_the_open_connections_in_order_and_leaves_new_ones_alone(echo_proxy: FaultProxy) -> None:
    with connect(echo_proxy) as sock:
        sock.sendall(b"a")
        assert sock.recv(100) == b"ok:a"
        echo_proxy.drop()
        assert sock.recv(100) == b""  # FIN, not RST
    with connect(echo_proxy) as sock:
        sock.sendall(b"b")
        assert sock.recv(100) == b"ok:b"


@pytest.mark.parametrize("links", ["close", "keep"])
def test_a_refusal_closes_or_keeps_the_open_connections(echo_proxy: FaultProxy, links: str) -> None:
    with connect(echo_proxy) as sock:
        sock.sendall(b"a")
        assert sock.recv(100) == b"ok:a"
        echo_proxy.refuse(links=links)
        with pytest.raises(ConnectionRefusedError):
            connect(echo_proxy)
        if links == "close":
            assert sock.recv(100) == b""  # FIN, as when a killed server's kernel closes its sockets
        else:
            sock.sendall(b"still")
            assert sock.recv(100) == b"ok:still"
