"""Hosts of a virtual network for one test: Linux network namespaces joined by veth links to a bridge.

Each "host" is a namespace with one interface (its end of a veth pair) and its own address on
10.214.0.0/24; the other ends are ports of one bridge, in a namespace of its own, so the test's
namespace (and the machine's) gets no interface, address or route. :meth:`Hosts.down` cuts one
host's link at the bridge (its cable pulled). :meth:`Hosts.teardown` deletes every namespace it
made (which deletes their interfaces too), and is safe to call after a failed build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from typing import Dict, List

SUBNET = "10.214.0"


class NamespacesUnavailable(Exception):
    """Namespaces or veth links cannot be made here (the test is skipped, with this reason)."""


class Hosts:
    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:6]
        self.bridge_ns = f"mcps{self.tag}br"
        self.namespaces: List[str] = []
        self.addresses: Dict[str, str] = {}
        self._ports: Dict[str, str] = {}

    def _ip(self, *args: str) -> None:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=False)
        if done.returncode != 0:
            raise NamespacesUnavailable(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")

    def build(self, roles: List[str]) -> Dict[str, str]:
        """A namespace per role, each linked to the bridge; returns role -> address.

        Raises:
            NamespacesUnavailable: not root, no ``ip``, or the kernel refused (the caller skips).
        """
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise NamespacesUnavailable("network namespaces need root and iproute2's `ip`")
        self._add_ns(self.bridge_ns)
        self._ip("-n", self.bridge_ns, "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.bridge_ns, "link", "set", "br0", "up")
        for number, role in enumerate(roles, start=1):
            ns = self.ns(role)
            self._add_ns(ns)
            host_end, port = f"h{self.tag}{number}", f"p{self.tag}{number}"  # unique: made before they move
            self._ip("link", "add", host_end, "netns", ns, "type", "veth", "peer", "name", port,
                     "netns", self.bridge_ns)
            self._ip("-n", self.bridge_ns, "link", "set", port, "master", "br0")
            self._ip("-n", self.bridge_ns, "link", "set", port, "up")
            address = f"{SUBNET}.{number}"
            self._ip("-n", ns, "addr", "add", f"{address}/24", "dev", host_end)
            self._ip("-n", ns, "link", "set", host_end, "up")
            self._ip("-n", ns, "link", "set", "lo", "up")
            self.addresses[role], self._ports[role] = address, port
        return dict(self.addresses)

    def _add_ns(self, ns: str) -> None:
        self._ip("netns", "add", ns)
        self.namespaces.append(ns)

    def ns(self, role: str) -> str:
        return f"mcps{self.tag}{role}"

    def run_in(self, role: str, argv: List[str]) -> List[str]:
        """``argv`` run inside ``role``'s namespace (same environment, same files)."""
        return ["ip", "netns", "exec", self.ns(role), *argv]

    def down(self, role: str) -> None:
        """Cut ``role``'s link: its bridge port goes down (nothing it sends arrives, nothing reaches it)."""
        self._ip("-n", self.bridge_ns, "link", "set", self._ports[role], "down")

    def teardown(self) -> None:
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20, check=False)
        self.namespaces.clear()
