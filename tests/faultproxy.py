"""A small TCP proxy of our own that puts faults between a client and a server on 127.0.0.1.

The kernel here has no netem: this proxy is what adds delay and loss. It forwards each
accepted connection to ``upstream`` and, per :attr:`FaultProxy.mode`, does one of:

* ``"pass"``: forward both ways (optionally after :attr:`latency` seconds per chunk);
* ``"stall"``: accept and connect upstream, then forward nothing server-to-client until
  the mode changes (a server that stops answering mid-stream);
* ``"cut"``: forward the first :attr:`cut_after` bytes of each response, then close both ends;
* ``"reset"``: answer each new connection with a TCP reset (SO_LINGER 0);
* ``"refused"``: stop listening: connects are refused (the listener is re-opened on the same
  port by any other mode);
* ``"blackhole"``: accept and read, never forward or answer.

It also counts, in what reached the upstream, the occurrences of :attr:`watch` (say
``b'"tools/call"'``): how many times a request reached a server, whatever the client believes.

Use as a context manager; :meth:`close` joins every thread and closes every socket.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import List, Optional, Tuple

MODES = ("pass", "stall", "cut", "reset", "refused", "blackhole")


class FaultProxy:
    def __init__(self, upstream: Tuple[str, int], *, watch: bytes = b'"tools/call"') -> None:
        self.upstream = upstream
        self.watch = watch
        self.latency = 0.0
        self.cut_after = 0
        self.seen = 0  # occurrences of ``watch`` forwarded upstream
        self._mode = "pass"
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._closed = False
        self._socks: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        self._listener: Optional[socket.socket] = None
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port = int(probe.getsockname()[1])
        probe.close()
        self._listen()

    # -- control --------------------------------------------------------------------------------

    @property
    def mode(self) -> str:
        return self._mode

    def set(self, mode: str, *, drop: bool = False) -> None:
        """Switch to ``mode``; ``drop`` also closes every open connection (a dead server's are gone)."""
        assert mode in MODES, mode
        with self._lock:
            self._mode = mode
            self._changed.notify_all()
        if drop:
            self.drop_all()
        if mode == "refused":
            self._unlisten()
        elif self._listener is None:
            self._listen()

    def drop_all(self) -> None:
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            _close(sock)

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._changed.notify_all()
        self._unlisten()
        self.drop_all()
        for thread in list(self._threads):
            thread.join(5)

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the listener ---------------------------------------------------------------------------

    def _listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        self._spawn(self._accept, listener)

    def _unlisten(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            try:
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept
            except OSError:
                pass
            listener.close()

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            self._serve(client)

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._socks.append(sock)
            return True

    def _serve(self, client: socket.socket) -> None:
        mode = self._mode
        if not self._track(client):
            _close(client)
            return
        if mode == "reset":
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            _close(client)
            return
        if mode == "blackhole":
            self._spawn(self._sink, client)
            return
        try:
            upstream = socket.create_connection(self.upstream, timeout=5)
        except OSError:  # the server is down: the client sees its connection reset
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            _close(client)
            return
        upstream.settimeout(None)
        if not self._track(upstream):
            _close(upstream)
            _close(client)
            return
        self._spawn(self._pump, client, upstream, True)
        self._spawn(self._pump, upstream, client, False)

    def _sink(self, client: socket.socket) -> None:
        try:
            while client.recv(65536):
                pass
        except OSError:
            pass
        _close(client)

    def _pump(self, src: socket.socket, dst: socket.socket, to_server: bool) -> None:
        sent = 0
        tail = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if to_server:
                    window = tail + data
                    with self._lock:
                        self.seen += window.count(self.watch) - tail.count(self.watch)
                    tail = window[-len(self.watch):]
                else:
                    with self._lock:
                        while self._mode == "stall" and not self._closed:
                            self._changed.wait()
                    if self._mode == "cut":
                        data = data[:max(self.cut_after - sent, 0)]
                        if data:
                            dst.sendall(data)
                        break
                if self.latency:
                    # The fault itself: added delay per chunk, cut short when the proxy closes.
                    with self._lock:
                        self._changed.wait_for(lambda: self._closed, timeout=self.latency)
                dst.sendall(data)
                sent += len(data)
        except OSError:
            pass
        _close(src)
        _close(dst)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
