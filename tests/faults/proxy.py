"""A TCP fault proxy for the faults suite: stdlib only, threads, 127.0.0.1.

``FaultProxy(upstream_port).start()`` listens on ``127.0.0.1:<port>`` and forwards every
connection to ``127.0.0.1:<upstream_port>``. A test switches faults at run time:

``latency(seconds)``
    every chunk, either way, is held that long before it is forwarded.
``stall(trigger=...)``
    once a connection has carried ``trigger`` upstream (default ``b"\"tools/call\""``; None: at once,
    on every connection), nothing more is forwarded either way, and the sockets stay open.
``cut(after, trigger=..., body=True)``
    once triggered, ``after`` more bytes of the response are forwarded (with ``body``: counted
    from the end of the HTTP response head, which passes whole), then both sockets are closed in
    order (FIN).
``reset(trigger=...)``
    once triggered, at the first response byte the client's socket is reset (RST: SO_LINGER 0).
``reject()``
    every new connection is reset (RST) as soon as it is accepted, before a byte is read or
    forwarded (a port that answers, then drops everything); open connections are left alone.
``refuse(links="reset")``
    the listener is closed (a connect is refused), as when a server goes away; its open
    connections are reset (``"reset"``: RST), closed in order (``"close"``: FIN, as when a killed
    server's kernel closes them) or left alone (``"keep"``: they end when the server closes them).
``black_hole()``
    connections are accepted and their bytes read and dropped: nothing reaches the server and
    nothing comes back (open connections too, from now on).
``drop()``
    closes every open connection in order (FIN), whatever the fault; new ones are not affected.
``heal()``
    back to plain forwarding: the listener is opened again on the same port, stalled connections
    flow again; connections that were cut or reset stay closed.

A fault armed with a trigger applies to every connection that carries the trigger after it was
armed; with a ``target`` (bytes of a request head, e.g. ``b"GET /sse"``) it applies instead to the
connections whose first request holds the target, once any connection carried the trigger (the
legacy HTTP+SSE transport answers a POST on its GET stream). ``requests(marker)`` counts the client-to-server chunks carrying ``marker`` that were
forwarded to the server (what the server may have parsed), for servers that cannot count
themselves. ``stop()`` closes every socket and joins every thread.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from typing import List, Optional

_CHUNK = 65536
_TICK = 0.02  # how often a connection thread looks again at the fault switch


class _Fault:
    """One fault setting; replaced whole (never mutated) when the test switches."""

    def __init__(self, kind: str = "none", trigger: Optional[bytes] = None, after: int = 0,
                 delay: float = 0.0, target: Optional[bytes] = None, body: bool = False,
                 links: str = "reset") -> None:
        self.kind = kind
        self.links = links  # under "refuse": what becomes of the open connections
        self.body = body
        self.trigger = trigger
        self.after = after
        self.delay = delay
        self.target = target
        self.fired = threading.Event()  # some connection carried the trigger (or there is none)
        if trigger is None:
            self.fired.set()


class _Link:
    """One client connection and its upstream connection, pumped by one thread."""

    def __init__(self, proxy: "FaultProxy", client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: Optional[socket.socket] = None
        self.fault: Optional[_Fault] = None  # the fault this link was caught by (its trigger passed)
        self.head = b""  # the start of the first request it carried (what a target is matched against)
        self.sent_after = 0
        # under a body-counted cut: the response bytes forwarded so far, until its head ended (then None)
        self.head_seen: Optional[bytes] = b""
        self.closed = False
        self.dropping = False  # set by FaultProxy.drop(): the link closes itself (FIN) at its next look
        self.thread = threading.Thread(target=self._run, name="test-fault-proxy-link", daemon=True)

    def _arm(self, fault: _Fault, chunk: Optional[bytes]) -> None:
        """Catch this link in ``fault`` when its trigger passed: on this link, or (with a target)
        on any link, this one being the target (the legacy SSE stream answering another link's POST)."""
        if self.fault is not None or fault.kind not in ("stall", "cut", "reset"):
            return
        own = chunk is not None and fault.trigger is not None and fault.trigger in chunk
        if own:
            fault.fired.set()
        if fault.target is None:
            caught = own or fault.trigger is None
        else:
            caught = fault.fired.is_set() and fault.target in self.head
        if caught:
            self.fault = fault
            self.sent_after = 0
            # its own trigger starts a new response (the head comes next); a target's head has long passed
            self.head_seen = b"" if own or fault.trigger is None else None

    def _run(self) -> None:
        try:
            self._pump()
        except OSError:
            pass
        finally:
            self.close()

    def _pump(self) -> None:
        proxy = self.proxy
        if proxy.current().kind == "reject":
            self.reset()
            return
        if proxy.current().kind != "black_hole":
            try:
                self.upstream = socket.create_connection(("127.0.0.1", proxy.upstream_port), timeout=5)
            except OSError:  # the server is down: the client sees its connection reset
                self.reset()
                return
            self.upstream.settimeout(None)
        with selectors.DefaultSelector() as sel:
            sel.register(self.client, selectors.EVENT_READ)
            if self.upstream is not None:
                sel.register(self.upstream, selectors.EVENT_READ)
            while not proxy.stopping.is_set() and not self.closed and not self.dropping:
                fault = proxy.current()
                if fault.kind == "refuse" and fault.links != "keep":
                    if fault.links == "reset":
                        self.reset()
                    return  # "close": the finally closes both sockets in order
                self._arm(fault, None)
                if self.fault is not None and self.fault.kind == "stall" and fault.kind == "stall":
                    proxy.changed.wait(_TICK)  # forward nothing until the fault is switched
                    continue
                if self.fault is not None and fault.kind == "none":
                    self.fault = None  # healed: a stalled link flows again
                for key, _ in sel.select(_TICK):
                    # A fault switched while select waited applies to what select brought: data the
                    # client sent after a stall began must stay unread, as on a stalled link.
                    fault = proxy.current()
                    self._arm(fault, None)
                    if self.fault is not None and self.fault.kind == "stall" and fault.kind == "stall":
                        break
                    sock = key.fileobj
                    data = sock.recv(_CHUNK)  # type: ignore[union-attr]
                    if not data:
                        return
                    if sock is self.client:
                        self._to_server(data, proxy.current())
                    else:
                        self._to_client(data, proxy.current())
                    if self.closed:
                        return

    def _to_server(self, data: bytes, fault: _Fault) -> None:
        if not self.head:
            self.head = data[:512]
        if fault.kind == "black_hole" or self.upstream is None:
            return  # dropped: the server never sees it
        if fault.kind == "latency":
            self.proxy.stopping.wait(fault.delay)
        if self.fault is not None and self.fault.kind == "stall":
            return
        self.upstream.sendall(data)
        self.proxy.forwarded(data)
        self._arm(fault, data)

    def _to_client(self, data: bytes, fault: _Fault) -> None:
        if fault.kind == "black_hole":
            return
        if fault.kind == "latency":
            self.proxy.stopping.wait(fault.delay)
        caught = self.fault
        if caught is None:
            self.client.sendall(data)
            return
        if caught.kind == "reset":
            self.reset()
        elif caught.kind == "cut":
            if caught.body and self.head_seen is not None:
                self.head_seen += data
                end = self.head_seen.find(b"\r\n\r\n")
                if end < 0:
                    self.client.sendall(data)
                    return
                rest = self.head_seen[end + 4:]
                self.client.sendall(data[:len(data) - len(rest)])
                self.head_seen = None
                data = rest
            room = caught.after - self.sent_after
            if room > 0:
                self.client.sendall(data[:room])
                self.sent_after += min(room, len(data))
            if self.sent_after >= caught.after:
                self.close()
        # stall: held back (the loop stops reading while the stall lasts)

    def reset(self) -> None:
        """Close the client's socket with RST (SO_LINGER on, zero seconds)."""
        try:
            self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in (self.client, self.upstream):
            if sock is None:
                continue
            try:
                sock.close()
            except OSError:
                pass


class FaultProxy:
    """Forwards 127.0.0.1:``port`` to 127.0.0.1:``upstream_port``, with faults switched at run time."""

    def __init__(self, upstream_port: int, port: int = 0) -> None:
        self.upstream_port = upstream_port
        self.port = port
        self.stopping = threading.Event()
        self.changed = threading.Event()
        self._lock = threading.Lock()
        self._fault = _Fault()
        self._links: List[_Link] = []
        self._listener: Optional[socket.socket] = None
        self._acceptor: Optional[threading.Thread] = None
        self._seen: List[bytes] = []

    # -- the switch ---------------------------------------------------------------------------------

    def current(self) -> _Fault:
        with self._lock:
            return self._fault

    def _switch(self, fault: _Fault) -> "FaultProxy":
        with self._lock:
            self._fault = fault
        self.changed.set()
        self.changed = threading.Event()
        return self

    def latency(self, seconds: float) -> "FaultProxy":
        return self._switch(_Fault("latency", delay=seconds))

    def stall(self, trigger: Optional[bytes] = b"\"tools/call\"", target: Optional[bytes] = None) -> "FaultProxy":
        return self._switch(_Fault("stall", trigger, target=target))

    def cut(self, after: int, trigger: Optional[bytes] = b"\"tools/call\"", target: Optional[bytes] = None,
            body: bool = True) -> "FaultProxy":
        return self._switch(_Fault("cut", trigger, after=after, target=target, body=body))

    def reset(self, trigger: Optional[bytes] = b"\"tools/call\"", target: Optional[bytes] = None) -> "FaultProxy":
        return self._switch(_Fault("reset", trigger, target=target))

    def reject(self) -> "FaultProxy":
        return self._switch(_Fault("reject"))

    def black_hole(self) -> "FaultProxy":
        return self._switch(_Fault("black_hole"))

    def refuse(self, links: str = "reset") -> "FaultProxy":
        assert links in ("reset", "close", "keep"), links
        self._switch(_Fault("refuse", links=links))
        self._close_listener()
        if links != "keep":
            self._join_links()  # each link resets or closes itself on its own thread (no socket closed under another)
        return self

    def drop(self) -> "FaultProxy":
        """Close every open connection in order (FIN), each on its own thread; the fault stays as it is."""
        with self._lock:
            links = list(self._links)
        for link in links:
            link.dropping = True
        self._join_links()
        return self

    def _join_links(self) -> None:
        with self._lock:
            links = list(self._links)
        for link in links:
            link.thread.join(5)

    def heal(self) -> "FaultProxy":
        refused = self.current().kind == "refuse"
        self._switch(_Fault())
        if refused:
            self._listen()
        return self

    # -- what went through --------------------------------------------------------------------------

    def forwarded(self, data: bytes) -> None:
        with self._lock:
            self._seen.append(data)

    def requests(self, marker: bytes) -> int:
        """How many client-to-server chunks carrying ``marker`` reached the server."""
        with self._lock:
            return sum(1 for chunk in self._seen if marker in chunk)

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    # -- life -----------------------------------------------------------------------------------------

    def start(self) -> "FaultProxy":
        self._listen()
        return self

    def _listen(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        listener.settimeout(_TICK)
        self.port = listener.getsockname()[1]
        self._listener = listener
        self._acceptor = threading.Thread(target=self._accept, args=(listener,), name="test-fault-proxy", daemon=True)
        self._acceptor.start()

    def _accept(self, listener: socket.socket) -> None:
        while not self.stopping.is_set() and self._listener is listener:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            client.settimeout(None)
            link = _Link(self, client)
            with self._lock:  # listed and started as one step: drop() and refuse() join every listed link
                self._links = [known for known in self._links if not known.closed or known.thread.is_alive()]
                self._links.append(link)
                link.thread.start()

    def _close_listener(self) -> None:
        listener, acceptor = self._listener, self._acceptor
        self._listener = None
        if acceptor is not None:
            acceptor.join(5)
        if listener is not None:
            listener.close()

    def stop(self) -> None:
        self.stopping.set()
        self.changed.set()
        self._close_listener()
        with self._lock:
            links = list(self._links)
        for link in links:
            link.thread.join(5)
            link.close()
