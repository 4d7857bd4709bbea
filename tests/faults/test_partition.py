"""A network partition: the link to a server in another network namespace goes down mid-call, then up.

Where the tests run as root and the kernel lets them make namespaces, a namespace with a veth
pair (host 10.213.N.1/30, namespace 10.213.N.2/30) runs the counting SDK server
(tests/faults/ns_server.py); the client connects from the host to 10.213.N.2 (a private address:
the egress gate lets MCP traffic go to the configured origin, whatever its class). Taking the
namespace's end of the link down drops every packet, with no RST and no FIN: the call must end by its
deadline with RequestTimeout, the tool must run at most once, and once the link is up again the
same client (or manager) must work. Elsewhere the test is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, List

import pytest

import mcpsync
from mcpsync import Manager, ReconnectPolicy, RequestTimeout, TransportError
from mcpsync.transports import StreamableHTTPTransport

from ..conftest import peer_python
from .conftest import OUTCOMES

pytestmark = pytest.mark.faults

DEADLINE = 3.0
SLACK = 1.5
QUICK = ReconnectPolicy(initial_delay=0.05, max_delay=0.5, jitter=0.0, max_attempts=1000, window=60)
SERVER = Path(__file__).parent / "ns_server.py"


def run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=20)


@dataclass
class Partition:
    """A server behind a veth link this test can take down and up."""

    namespace: str
    inner_end: str
    address: str
    port: int

    def url(self) -> str:
        return f"http://{self.address}:{self.port}/mcp"

    # The namespace's end goes down, not the host's: the host keeps its route to the namespace, so packets
    # are dropped silently, as across a broken link. With the host's end down its route goes too, and the
    # packets would follow the default route to whatever answers there (seen here: another HTTP server).
    def down(self) -> None:
        run("ip", "netns", "exec", self.namespace, "ip", "link", "set", self.inner_end, "down")

    def up(self) -> None:
        """Bring the link up and wait until the host reaches the server again (its neighbour entry, failed
        during the partition, is resolved anew: until then a connect fails at once with "no route to host")."""
        run("ip", "netns", "exec", self.namespace, "ip", "link", "set", self.inner_end, "up")
        deadline = time.monotonic() + 15
        pause = threading.Event()
        while True:
            try:
                with socket.create_connection((self.address, self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                pause.wait(0.05)  # no event exists for "the network is back"


def cannot_partition() -> str:
    """Why this machine cannot make a partition here ("" if it can)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "a network namespace needs root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    return ""


def wait_listening(address: str, port: int, proc: "subprocess.Popen[bytes]", timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the namespace's server exited with code {proc.returncode}")
        try:
            with socket.create_connection((address, port), timeout=0.5):
                return
        except OSError:
            pause.wait(0.05)  # no event exists for "a process in another namespace started listening"
    raise RuntimeError(f"the namespace's server did not listen on {address}:{port} within {timeout}s")


@pytest.fixture
def partition() -> Iterator[Partition]:
    """A namespace, its veth pair and the server in it; all torn down after the test (also when setup fails)."""
    reason = cannot_partition()
    if reason:
        pytest.skip(reason)
    python = peer_python()
    n = os.getpid() % 250 + 1
    suffix = uuid.uuid4().hex[:4]
    namespace, host_end, inner_end = f"mcpsync-f{suffix}", f"mcpf{suffix}h", f"mcpf{suffix}n"
    host_address, address = f"10.213.{n}.1", f"10.213.{n}.2"
    proc = None
    made: List[str] = []
    try:
        try:
            run("ip", "netns", "add", namespace)
            made.append("netns")
            run("ip", "link", "add", host_end, "type", "veth", "peer", "name", inner_end)
            made.append("link")
            run("ip", "link", "set", inner_end, "netns", namespace)
            run("ip", "addr", "add", f"{host_address}/30", "dev", host_end)
            run("ip", "link", "set", host_end, "up")
            run("ip", "netns", "exec", namespace, "ip", "addr", "add", f"{address}/30", "dev", inner_end)
            run("ip", "netns", "exec", namespace, "ip", "link", "set", inner_end, "up")
            run("ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up")
            # never the default route: should the veth route go, the namespace's addresses stay unreachable
            run("ip", "route", "add", "blackhole", f"10.213.{n}.0/30", "metric", "4095")
            made.append("route")
        except (subprocess.CalledProcessError, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            pytest.skip(f"cannot make a network namespace here: {detail.decode(errors='replace').strip() or exc}")
        port = 18000 + os.getpid() % 1000
        proc = subprocess.Popen(["ip", "netns", "exec", namespace, python, str(SERVER), address, str(port)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(address, port, proc)
        yield Partition(namespace, inner_end, address, port)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait(10)
        if "route" in made:
            subprocess.run(["ip", "route", "del", "blackhole", f"10.213.{n}.0/30", "metric", "4095"],
                           capture_output=True, timeout=20)
        if "link" in made:
            subprocess.run(["ip", "link", "del", host_end], capture_output=True, timeout=20)
        if "netns" in made:
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True, timeout=20)


def runs(client: Any, tag: str) -> int:
    return int(client.call_tool("runs", {"tag": tag}, timeout=15).text)


@pytest.mark.parametrize("protocol", ["legacy", "modern"])
@pytest.mark.parametrize("via", ["client", "manager"])
def test_a_partition_mid_call_ends_it_by_its_deadline_and_the_link_back_up_heals(
        partition: Partition, protocol: str, via: str) -> None:
    tag = f"p-{uuid.uuid4().hex[:8]}"
    started = threading.Event()
    with mcpsync.Client(StreamableHTTPTransport(partition.url()), protocol=protocol, timeout=15) as observer:
        if via == "client":
            caller: Any = mcpsync.Client(StreamableHTTPTransport(partition.url()), protocol=protocol,
                                         timeout=15).connect()
            call = lambda arguments, timeout: caller.call_tool("work", arguments, timeout=timeout)  # noqa: E731
        else:
            caller = Manager({"mcpServers": {"ns": {"type": "http", "url": partition.url()}}}, cache=False,
                             reconnect=QUICK, timeout=15, client_options={"protocol": protocol})
            caller.connect_all()
            name = next(tool.qualified_name for tool in caller.tools() if tool.name == "work")
            call = lambda arguments, timeout: caller.call_tool(name, arguments, timeout=timeout)  # noqa: E731
        try:
            outcome: List[Any] = []

            def work() -> None:
                begun = time.monotonic()
                started.set()
                try:
                    outcome.append(call({"tag": tag, "seconds": 1.0}, DEADLINE))
                except Exception as exc:  # noqa: BLE001 - judged below
                    outcome.append(exc)
                outcome.append(time.monotonic() - begun)

            thread = threading.Thread(target=work, name="test-partition-call")
            thread.start()
            started.wait(10)
            deadline = time.monotonic() + 10
            while runs(observer, tag) < 1 and time.monotonic() < deadline:  # the server has the call
                threading.Event().wait(0.02)
            partition.down()
            try:
                thread.join(DEADLINE + SLACK + 5)
            finally:
                partition.up()
            error, elapsed = outcome
            OUTCOMES.append((f"{via} (partition)", protocol, "partition", type(error).__name__, elapsed, 1))
            assert elapsed <= DEADLINE + SLACK, f"the call took {elapsed:.2f}s (deadline {DEADLINE}s)"
            assert isinstance(error, RequestTimeout), repr(error)
            assert isinstance(error, (TransportError, RequestTimeout))
            again = f"a-{uuid.uuid4().hex[:8]}"
            healed = call({"tag": again, "seconds": 0.0}, 20)
            assert healed.text == f"{again} ran 1"
            assert runs(observer, tag) == 1, "the call ran twice"
        finally:
            caller.close()
