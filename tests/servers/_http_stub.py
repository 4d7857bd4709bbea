"""The HTTP plumbing every threaded test server on 127.0.0.1 shares (stdlib only).

:class:`StubServer` binds a free port, serves on a daemon thread, records what it was sent
under one condition, and on :meth:`StubServer.stop` shuts every open connection so that no
handler thread outlives the test (the leak fixture checks). :class:`StubHandler` is the
request handler base: HTTP/1.1, quiet, its connection tracked by its server. A test server
subclasses both and adds only its own behaviour.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, List, Type, TypeVar

S = TypeVar("S", bound="StubServer")


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that drop connections on purpose are the point of some tests


class StubHandler(BaseHTTPRequestHandler):
    """A request handler whose ``owner`` is its :class:`StubServer`; tracked while connected."""

    owner: "StubServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.owner.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        self.owner.untrack(self.connection)


class StubServer:
    """A threaded HTTP server for one test: ``start()``, ``url()``, ``record()``, ``stop()``.

    ``port`` 0 takes a free one; a given port can be bound again at once (a "restarted" server).
    """

    def __init__(self, handler: Type[StubHandler], *, name: str, quiet: bool = False, port: int = 0) -> None:
        self.records: List[Any] = []
        self.cond = threading.Condition()
        self.stopping = threading.Event()
        self._sockets: List[socket.socket] = []
        self._threads: List[threading.Thread] = []
        owner = self

        class Handler(handler):  # type: ignore[valid-type,misc]
            pass

        Handler.owner = owner
        self.httpd = (_QuietServer if quiet else ThreadingHTTPServer)(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=name, daemon=True)

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self: S) -> S:
        self._thread.start()
        return self

    def track(self, connection: socket.socket) -> None:
        with self.cond:
            self._sockets.append(connection)
            self._threads.append(threading.current_thread())

    def untrack(self, connection: socket.socket) -> None:
        with self.cond:
            if connection in self._sockets:
                self._sockets.remove(connection)

    def record(self, rec: Any) -> None:
        with self.cond:
            self.records.append(rec)
            self.cond.notify_all()

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        with self.cond:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(5)
        self.httpd.server_close()
        self._thread.join(5)
