"""Where an authorization flow may send requests: a remote MCP server cannot aim mcpsync at this machine's network.

During discovery, registration and token requests the client fetches URLs the
MCP server (or the authorization server it names) chose. A hostile remote
server could name ``http://127.0.0.1:8500/...`` or an address on the local
network and have the client GET or POST it (server-side request forgery).
The rule, by where the MCP server itself is:

* **loopback** (``localhost``, 127.0.0.0/8, ``::1``): anything goes (local
  development; http on loopback included);
* **private** (an intranet server: RFC 1918, unique-local, carrier-grade NAT
  and other non-global addresses): https only, to private or public
  addresses, never to loopback or link-local ones (169.254.0.0/16, the cloud
  metadata service);
* **public**: https only, to public addresses only.

A host name is resolved and every address it has is checked. URLs on the MCP
server's own origin, and on origins the user configured (a pinned issuer, an
IdP token endpoint), are always allowed. A refusal is
:class:`~mcpsync.AuthError` ``unsafe_url``.

Residual risk: the name is resolved again when the request is sent, so a DNS
server that answers differently between the check and the fetch (DNS
rebinding) is not stopped here; no redirect is ever followed, which keeps the
window to that one lookup.

The seams for tests: :class:`FetchPolicy` takes the MCP server's class and a
resolver as input, and :func:`FetchPolicy.for_server` reads the module-level
:func:`origin_class` and :func:`resolve` at call time.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Callable, Dict, Iterable, List, Optional, Union
from urllib.parse import urlsplit

from ..exceptions import AuthError, ConnectError
from ..transports._urls import display_url, origin

__all__ = ["LOOPBACK", "PRIVATE", "PUBLIC", "FetchPolicy", "address_class", "origin_class", "resolve"]

LOOPBACK, LINK_LOCAL, PRIVATE, PUBLIC = "loopback", "link-local", "private", "public"

Resolver = Callable[[str, int], List[str]]
Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]

# The address classes each class of MCP server may have the client fetch from.
_ALLOWED = {LOOPBACK: {LOOPBACK, LINK_LOCAL, PRIVATE, PUBLIC}, PRIVATE: {PRIVATE, PUBLIC}, PUBLIC: {PUBLIC}}


def resolve(host: str, port: int) -> List[str]:
    """Every address ``host`` resolves to (blocking DNS).

    Raises:
        OSError: it does not resolve.
    """
    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})


def _address(text: str) -> Optional[Address]:
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return address


def address_class(text: str) -> str:
    """``loopback``, ``link-local``, ``private`` (any other non-global address) or ``public``."""
    address = _address(text)
    if address is None:
        return PRIVATE  # not an address at all: never treated as a public one
    if address.is_loopback:
        return LOOPBACK
    if address.is_link_local:
        return LINK_LOCAL
    if not address.is_global or address.is_multicast:
        return PRIVATE
    return PUBLIC


def origin_class(url: str) -> str:
    """The class of the MCP server at ``url``: of its literal address, else of what its name resolves to.

    A name counts as its most public address; one that does not resolve counts as public.
    """
    _, host, port = origin(url)
    if not host:
        return PUBLIC
    if host == "localhost" or host.endswith(".localhost"):
        return LOOPBACK
    if _address(host) is not None:
        found = address_class(host)
        return PRIVATE if found == LINK_LOCAL else found
    try:
        classes = {address_class(a) for a in resolve(host, port or 443)}
    except OSError:
        return PUBLIC
    for kind in (PUBLIC, PRIVATE, LOOPBACK):
        if kind in classes:
            return kind
    return PUBLIC


class FetchPolicy:
    """The SSRF rule of one flow (see the module docstring). Not thread-safe; one flow, one thread.

    Args:
        server_url: the MCP server (its origin is always allowed).
        server_class: where that server is: ``loopback``, ``private`` or ``public``.
        resolver: ``(host, port) -> [addresses]``; raises OSError when the name does not resolve.
        trusted: more URLs whose origins the user configured (always allowed).
    """

    def __init__(self, server_url: Optional[str], *, server_class: str, resolver: Resolver,
                 trusted: Iterable[Optional[str]] = ()) -> None:
        if server_class not in _ALLOWED:
            raise ValueError(f"server_class must be one of {sorted(_ALLOWED)}, not {server_class!r}")
        self.server_url = server_url
        self.server_class = server_class
        self._resolver = resolver
        self._trusted = {origin(url) for url in (server_url, *trusted) if url}
        self._seen: Dict[str, List[str]] = {}

    @classmethod
    def for_server(cls, server_url: Optional[str], trusted: Iterable[Optional[str]] = ()) -> "FetchPolicy":
        """The policy for the MCP server at ``server_url``, classified with :func:`origin_class`."""
        kind = origin_class(server_url) if server_url else PUBLIC
        return cls(server_url, server_class=kind, resolver=resolve, trusted=trusted)

    def check(self, method: str, url: str) -> None:
        """Allow the request, or raise.

        Raises:
            AuthError: (``unsafe_url``) the URL may not be fetched from a server of this class.
            ConnectError: its host name does not resolve.
        """
        if self.server_class == LOOPBACK or origin(url) in self._trusted:
            return
        verb = "fetch" if method == "GET" else "send a request to"
        shown, server = display_url(url), display_url(self.server_url or "")
        parts = urlsplit(url)
        if parts.scheme.lower() != "https":
            raise AuthError(f"Refusing to {verb} {shown}: the MCP server {server} is not on this machine, so "
                            "the URLs its metadata names must be https", error="unsafe_url")
        if "\\" in url or "@" in parts.netloc or not parts.hostname:
            raise AuthError(f"Refusing to {verb} {shown}: its host cannot be read unambiguously", error="unsafe_url")
        host = parts.hostname
        for address in self._addresses(host, parts.port or 443, shown):
            kind = address_class(address)
            if kind not in _ALLOWED[self.server_class]:
                where = f"{host} is {address}" if address != host else f"{host} is"
                raise AuthError(f"Refusing to {verb} {shown}: {where} a {kind} address, and the MCP server "
                                f"{server} is {self.server_class}: a remote server may not point mcpsync at this "
                                "machine or its network. If this is your own setup, connect to the MCP server "
                                "by a local address", error="unsafe_url")

    def _addresses(self, host: str, port: int, shown: str) -> List[str]:
        if host.lower() == "localhost" or host.lower().endswith(".localhost"):
            return ["127.0.0.1"]
        if _address(host) is not None:
            return [host]
        if host not in self._seen:
            try:
                self._seen[host] = self._resolver(host, port)
            except OSError as exc:
                raise ConnectError(f"Cannot resolve the host of {shown}: {exc}") from exc
        return self._seen[host]
