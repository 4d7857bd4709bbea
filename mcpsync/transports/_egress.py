"""The egress gate: where every HTTP request mcpsync sends may go, decided on the URL about to be sent.

Every ``requests.Session`` mcpsync builds (:func:`._http_session.new_session`) is given a
:class:`Gate` when it is built, and its adapter asks that gate about each request in ``send``,
the one place every request passes: the first one, every redirect hop requests follows, and a
request an auth object sends again. The URL checked is the ``PreparedRequest``'s, the one that
is about to go out, never a re-parse of a header beside it. Two rules live here:

* **same origin** (:class:`OriginGate`, for MCP traffic: Streamable HTTP POST/GET/DELETE, the
  legacy SSE GET and POSTs, ``call_mcp``): every request goes to the scheme, host and port of the
  configured URL;
* **address classes** (:class:`DiscoveryGate`, for an authorization flow's metadata,
  registration, token, IdP and identity-token requests): a remote MCP server may not aim the
  client at this machine or its network (see :func:`address_class`).

A URL the two URL parsers in play (the standard library's and urllib3's) read as different
origins is refused, and a cloud metadata address (:data:`METADATA_ADDRESSES`) is refused by every
gate. Each new connection is checked once more, right after it connects and before any byte is
sent, on the address it reached (:meth:`Gate.check_peer`): a name is caught there whatever it
resolved to at the check. A redirect's ``Location`` holding a control character, whitespace, a backslash or userinfo
is refused before any hop (:func:`check_reference`). A refusal is
:class:`~mcpsync.exceptions.EgressRefused`, raised before any byte goes out.

Pure decisions, plus DNS resolution for :class:`DiscoveryGate`; no HTTP library is imported
here except urllib3's URL parser, when a gate first checks a URL.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, Union
from urllib.parse import urljoin, urlsplit

from ..exceptions import ConnectError, EgressRefused
from ._urls import display_url, origin

__all__ = [
    "LINK_LOCAL", "LOOPBACK", "METADATA", "METADATA_ADDRESSES", "PRIVATE", "PUBLIC", "AnyOrigin", "DiscoveryGate",
    "Gate", "OriginGate", "address_class", "check_reference", "origin_class", "resolve", "shown", "target",
]

LOOPBACK, LINK_LOCAL, PRIVATE, PUBLIC, METADATA = "loopback", "link-local", "private", "public", "metadata"

Address = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
Resolver = Callable[[str, int], List[str]]
#: (scheme, host, port): lower-cased, brackets off an IPv6 host, the scheme's default port filled in.
Target = Tuple[str, str, Optional[int]]

#: Cloud instance metadata services (AWS IPv4 and IPv6, GCP and Azure share the first; Alibaba):
#: they hand out the machine's credentials to whoever asks, so no gate ever lets a request reach them.
METADATA_ADDRESSES: FrozenSet[Address] = frozenset(
    ipaddress.ip_address(text) for text in ("169.254.169.254", "fd00:ec2::254", "100.100.100.200"))

# The address classes each class of MCP server may have the client fetch from (metadata: none).
_ALLOWED = {LOOPBACK: {LOOPBACK, LINK_LOCAL, PRIVATE, PUBLIC}, PRIVATE: {PRIVATE, PUBLIC}, PUBLIC: {PUBLIC}}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ZERO_NET = ipaddress.ip_network("0.0.0.0/8")
# The spellings inet_aton accepts besides dotted quads (decimal, hex, octal, fewer parts): "0", "0x7f.1".
_LEGACY_IPV4 = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


# -- addresses ---------------------------------------------------------------------------------------


def resolve(host: str, port: int) -> List[str]:
    """Every address ``host`` resolves to (blocking DNS).

    Raises:
        OSError: it does not resolve.
    """
    import socket  # only when a name is resolved: keeps `import mcpsync` light

    return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)})


def ip_address(text: str) -> Optional[Address]:
    """The address ``text`` spells, in any spelling the system resolver reads as one, or None.

    Brackets and a zone (``%eth0``) are dropped; an IPv4-mapped IPv6 address is its IPv4
    address; ``0``, ``2130706433``, ``0x7f.1`` and ``0177.0.0.1`` are read as ``inet_aton`` reads them.
    """
    bare = text.strip("[]").split("%", 1)[0]
    try:
        address: Address = ipaddress.ip_address(bare)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(bare):
            return None
        try:
            import socket  # a legacy IPv4 spelling, read as inet_aton reads it

            address = ipaddress.IPv4Address(socket.inet_aton(bare))
        except (OSError, ValueError):
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    return address


def address_class(text: str) -> str:
    """``metadata``, ``loopback``, ``link-local``, ``private`` (any other non-global address) or ``public``.

    An unspecified address (``0.0.0.0/8``, ``::``) is loopback: connecting to it reaches this
    machine. Text that is not an address counts as private, never as public.
    """
    address = ip_address(text)
    if address is None:
        return PRIVATE
    if address in METADATA_ADDRESSES:
        return METADATA
    if address.is_unspecified or address.is_loopback or (
            isinstance(address, ipaddress.IPv4Address) and address in _ZERO_NET):
        return LOOPBACK
    if address.is_link_local:
        return LINK_LOCAL
    if not address.is_global or address.is_multicast:
        return PRIVATE
    return PUBLIC


def _is_local_name(host: str) -> bool:
    host = host.lower().rstrip(".")
    return host == "localhost" or host.endswith(".localhost")


def origin_class(url: str) -> str:
    """The class of the MCP server at ``url``: of its literal address, else of what its name resolves to.

    A name counts as its most public address; one that does not resolve counts as public, and so
    does a metadata address (which no gate lets a request reach anyway).
    """
    _, host, port = origin(url)
    if not host:
        return PUBLIC
    if _is_local_name(host):
        return LOOPBACK
    if ip_address(host) is not None:
        found = address_class(host)
        return {LINK_LOCAL: PRIVATE, METADATA: PUBLIC}.get(found, found)
    try:
        classes = {address_class(a) for a in resolve(host, port or 443)}
    except OSError:
        return PUBLIC
    for kind in (PUBLIC, PRIVATE, LOOPBACK):
        if kind in classes:
            return kind
    return PUBLIC


# -- URLs --------------------------------------------------------------------------------------------


def _unsafe_character(text: str) -> bool:
    return any(ch <= " " or ch == "\x7f" or ch == "\\" or not ch.isprintable() for ch in text)


_USERINFO = re.compile(r"(//)[^/?#]*@")


def shown(text: str) -> str:
    """``text`` (a URL or reference a server sent) safe for a message: no query, fragment or
    userinfo, at most 200 characters, and quoted with every control character escaped (``'\\x01...'``)."""
    text = _USERINFO.sub(r"\1***@", text.split("?", 1)[0].split("#", 1)[0])[:200]
    return ascii(text)


def check_reference(base: str, reference: str, what: str) -> str:
    """``reference`` resolved against ``base``, if it is a plain URL or path; else EgressRefused.

    For what a server hands over as a place to send requests to (a redirect's ``Location``, a
    legacy ``endpoint`` event): a control character, whitespace, a backslash or userinfo (``@`` in
    the authority) is refused outright. No honest server needs them, and they are where URL
    parsers disagree (requests strips leading C0 controls and spaces that a requoting check turns
    into a relative path). ``what`` names the reference in the message.

    Raises:
        EgressRefused: (``rule="reference"``) the reference holds one of those.
    """
    if _unsafe_character(reference) or "@" in urlsplit(reference).netloc:
        raise EgressRefused(f"Refusing {what} {shown(reference)} from {display_url(base)}: it holds a control character, "
                            "whitespace, a backslash or userinfo, so nothing was sent to it. A server should name "
                            "a plain URL or path; if this server is yours, fix what it sends, otherwise report it "
                            "to its operator", url=display_url(base), rule="reference")
    return urljoin(base, reference)


def target(url: str) -> Target:
    """Where a request for ``url`` goes: (scheme, host, port), as both URL parsers in play read it.

    Raises:
        EgressRefused: (``rule="unreadable"``) a parser cannot read it, or the two read different
            origins (a backslash or ``@`` in the authority, say).
    """
    where = _shown_target(url)
    mine, theirs = _both_readings(url, where)
    if mine != theirs or not mine[1] or _unsafe_character(mine[1]):
        raise EgressRefused(f"Refusing to send a request to {where}: its host cannot be read unambiguously "
                            "(URL parsers disagree about it)", url=where, rule="unreadable")
    return mine


def _shown_target(url: str) -> str:
    """``url`` as a refusal shows it: without its secrets, escaped if it holds unsafe characters."""
    try:
        return display_url(url) if not _unsafe_character(url) else shown(url)
    except ValueError:
        return shown(url)


def _both_readings(url: str, where: str) -> Tuple[Target, Target]:
    """``url``'s (scheme, host, port) as the standard library and as urllib3 read it, each with the
    scheme's default port when it names none.

    Raises:
        EgressRefused: (``rule="unreadable"``) either parser cannot read it.
    """
    from urllib3.util import parse_url  # noqa: PLC0415 (the HTTP stack is loaded by then)

    try:
        parts = urlsplit(url)
        mine: Target = ((parts.scheme or "").lower(), (parts.hostname or "").lower(), parts.port)
        parsed = parse_url(url)
        theirs: Target = ((parsed.scheme or "").lower(), (parsed.host or "").strip("[]").lower(), parsed.port)
    except ValueError as exc:
        raise EgressRefused(f"Refusing to send a request to {where}: its address cannot be read (a bad port, "
                            "host or IPv6 literal)", url=where, rule="unreadable") from exc
    return _with_default_port(mine), _with_default_port(theirs)


def _with_default_port(where: Target) -> Target:
    scheme, host, port = where
    return scheme, host, port if port is not None else _DEFAULT_PORTS.get(scheme)


def _target_text(where: Target) -> str:
    scheme, host, port = where
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" + ("" if port is None or _DEFAULT_PORTS.get(scheme) == port else f":{port}")


# -- gates -------------------------------------------------------------------------------------------


class Gate:
    """The rule a session's requests are held to. Subclasses add theirs in :meth:`_allow`.

    :meth:`check` is called by the session's adapter for every request, from any thread; it
    remembers the few URLs it allowed last, so the requests of one connection cost one set look-up.
    """

    #: How many allowed URLs are remembered (one connection uses one to three).
    remembered = 16
    #: The rule for a place a server names to send requests to (see :func:`check_reference`).
    check_reference = staticmethod(check_reference)

    def __init__(self) -> None:
        self._allowed: Set[str] = set()

    def check(self, method: str, url: str) -> None:
        """Allow a ``method`` request to ``url`` (the prepared URL about to be sent), or raise.

        Raises:
            EgressRefused: the URL breaks the gate's rule (nothing has been sent).
            ConnectError: (a discovery gate) its host name does not resolve.
        """
        if url in self._allowed:
            return
        where = target(url)
        if _is_metadata(where[1]):
            raise EgressRefused(f"Refusing to send a request to {display_url(url)}: {where[1]} is a cloud metadata "
                                "service address, which hands out this machine's credentials; mcpsync never "
                                "sends a request there", url=display_url(url), rule="metadata")
        self._allow(method, url, where)
        if len(self._allowed) >= self.remembered:
            self._allowed.clear()
        self._allowed.add(url)

    def _allow(self, method: str, url: str, where: Target) -> None:
        """Subclass: raise EgressRefused when the rule refuses ``url`` (already read as ``where``)."""

    def check_peer(self, scheme: str, host: str, port: Optional[int], address: Optional[str]) -> None:
        """Allow a new connection to ``host`` that reached ``address``, or raise; before any byte is sent.

        Called by the session's connections right after connecting: the address checked is the one
        the system resolver gave this time (a name that changed its answer since :meth:`check`,
        DNS rebinding, is caught here). Through a proxy, the address is the proxy's.

        Raises:
            EgressRefused: the address is a metadata address, or breaks the gate's rule.
        """
        if address is None:
            return
        shown = _target_text((scheme, host.lower(), port))
        if address_class(address) == METADATA:
            raise EgressRefused(f"Refusing to send a request to {shown}: it connected to {address}, a cloud metadata "
                                "service address, which hands out this machine's credentials; mcpsync never sends "
                                "a request there", url=shown, rule="metadata")
        self._allow_peer((scheme, host.lower(), port), address)

    def _allow_peer(self, where: Target, address: str) -> None:
        """Subclass: raise EgressRefused when a connection to ``where`` may not have reached ``address``."""


class AnyOrigin(Gate):
    """Any origin (but never a metadata address or an unreadable URL): for a caller that checked the URL itself."""


class OriginGate(Gate):
    """MCP traffic: every request, every redirect hop included, stays on the configured URL's origin.

    Args:
        url: the configured MCP URL (its scheme, host and port are the only ones allowed).
    """

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self._origin: Optional[Target] = None

    def _allow(self, method: str, url: str, where: Target) -> None:
        if self._origin is None:
            self._origin = target(_prepared(self.url))
        if where != self._origin:
            here = _target_text(self._origin)
            raise EgressRefused(f"Refusing to send {method} {display_url(url)}: it is on another origin than the "
                                f"configured {display_url(self.url)} ({_target_text(where)}, not {here}). mcpsync "
                                f"sends MCP requests only to the origin it was given, so that credentials, headers, "
                                f"the session id and request bodies meant for {here} reach no other server",
                                url=display_url(url), rule="origin")


class DiscoveryGate(Gate):
    """An authorization flow's requests: the address classes by where the MCP server is.

    * **loopback** server (``localhost``, 127.0.0.0/8, ``::1``, ``0.0.0.0/8``, ``::``): anything
      (local development; http on loopback included);
    * **private** server (RFC 1918, unique-local, carrier-grade NAT, other non-global
      addresses): https only, to private or public addresses, never loopback or link-local;
    * **public** server: https only, to public addresses only.

    Never a metadata address, whatever the class (a name is resolved to find one, for a loopback
    server too). A host name is resolved and every address it has is checked. The MCP server's
    own origin and the origins the user configured (``trusted``: a pinned issuer, an IdP token
    endpoint) are allowed without a lookup (but never as a literal metadata address). Not
    thread-safe: one flow, one thread.

    The name is resolved again when the connection is made; :meth:`check_peer` then checks the
    address the connection actually reached, before any byte is sent, so a DNS server that
    answers differently the second time (DNS rebinding) is refused too.

    Args:
        server_url: the MCP server.
        server_class: ``loopback``, ``private`` or ``public``.
        resolver: ``(host, port) -> [addresses]``; raises OSError when the name does not resolve.
        trusted: more URLs whose origins the user configured.
    """

    def __init__(self, server_url: Optional[str], *, server_class: str, resolver: Resolver = resolve,
                 trusted: Iterable[Optional[str]] = ()) -> None:
        super().__init__()
        if server_class not in _ALLOWED:
            raise ValueError(f"server_class must be one of {sorted(_ALLOWED)}, not {server_class!r}")
        self.server_url = server_url
        self.server_class = server_class
        self._resolver = resolver
        self._trusted = {origin(url) for url in (server_url, *trusted) if url}
        self._seen: Dict[str, List[str]] = {}

    @classmethod
    def for_server(cls, server_url: Optional[str], trusted: Iterable[Optional[str]] = ()) -> "DiscoveryGate":
        """The gate for the MCP server at ``server_url``, classified with :func:`origin_class`."""
        kind = origin_class(server_url) if server_url else PUBLIC
        return cls(server_url, server_class=kind, resolver=resolve, trusted=trusted)

    def _allow(self, method: str, url: str, where: Target) -> None:
        scheme, host, port = where
        if origin(url) in self._trusted:
            return  # the user named it (a literal metadata address was refused already)
        verb = "fetch" if method == "GET" else "send a request to"
        shown, server = display_url(url), display_url(self.server_url or "")
        if self.server_class != LOOPBACK:
            _check_remote_named(url, scheme, verb, shown, server)
        for address in self._addresses(host, port or 443, shown):
            self._check_address(address, host, verb, shown, server)

    def _check_address(self, address: str, host: str, verb: str, shown: str, server: str) -> None:
        """Refuse ``address`` (one that ``host`` resolved to) if it is a metadata service's, or of a
        class the MCP server's own class may not point at."""
        kind = address_class(address)
        if kind == METADATA:
            raise EgressRefused(f"Refusing to {verb} {shown}: {host} is {address}, a cloud metadata service "
                                "address, which hands out this machine's credentials; mcpsync never sends a "
                                "request there", url=shown, rule="metadata")
        if kind not in _ALLOWED[self.server_class]:
            where_text = f"{host} is {address}" if address != host else f"{host} is"
            raise EgressRefused(f"Refusing to {verb} {shown}: {where_text} a {kind} address, and the MCP server "
                                f"{server} is {self.server_class}: a remote server may not point mcpsync at this "
                                "machine or its network. If this is your own setup, connect to the MCP server "
                                "by a local address", url=shown, rule="address")

    def _allow_peer(self, where: Target, address: str) -> None:
        if where in self._trusted or self.server_class == LOOPBACK:
            return
        kind = address_class(address)
        if kind not in _ALLOWED[self.server_class]:
            shown = _target_text(where)
            raise EgressRefused(f"Refusing to send a request to {shown}: {where[1]} led to {address}, a {kind} "
                                f"address, when connecting (its address changed since it was checked, or it was "
                                f"never resolved to a public one), and the MCP server "
                                f"{display_url(self.server_url or '')} is {self.server_class}: a remote server may "
                                "not point mcpsync at this machine or its network", url=shown, rule="address")

    def _addresses(self, host: str, port: int, shown: str) -> List[str]:
        if _is_local_name(host):
            return ["127.0.0.1"]
        if ip_address(host) is not None:
            return [host]
        if host not in self._seen:
            try:
                self._seen[host] = self._resolver(host, port)
            except OSError as exc:
                raise ConnectError(f"Cannot resolve the host of {shown}: {exc}") from exc
        return self._seen[host]


def _prepared(url: str) -> str:
    """``url`` as requests prepares it (an IDNA host encoded, say); ``url`` itself if it cannot."""
    import requests  # noqa: PLC0415 (the HTTP stack is loaded by then)

    request = requests.PreparedRequest()
    try:
        request.prepare_url(url, None)
    except requests.exceptions.RequestException:
        return url
    return str(request.url)


def _is_metadata(host: str) -> bool:
    address = ip_address(host)
    return address is not None and address in METADATA_ADDRESSES


def _check_remote_named(url: str, scheme: str, verb: str, shown: str, server: str) -> None:
    """What a URL named by a server not on this machine must be: https, with no userinfo."""
    if scheme != "https":
        raise EgressRefused(f"Refusing to {verb} {shown}: the MCP server {server} is not on this machine, "
                            "so the URLs its metadata names must be https", url=shown, rule="address")
    if "@" in urlsplit(url).netloc:
        raise EgressRefused(f"Refusing to {verb} {shown}: its host cannot be read unambiguously", url=shown,
                            rule="unreadable")
