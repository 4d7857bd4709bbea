"""Which era a server speaks: probing, the decision rules, and the per-process era cache.

``protocol="auto"`` finds out per server:

* stdio (and other byte streams): ``server/discover`` carrying the modern
  version is sent first, with a short probe timeout. A DiscoverResult, or a
  recognised modern error (``-32022`` with ``data.supported``), means modern;
  anything else, whatever the error code, or no answer in time, means legacy
  ``initialize``. The probe's late answer is dropped by id like any other.
* Streamable HTTP: the modern request goes first. A 4xx whose body is a
  recognised modern JSON-RPC error (``-32022``, ``-32021``, ``-32020``,
  ``-32602``, or ``-32601`` with 404) means modern; an empty or unrecognised
  body means legacy ``initialize`` (and from there the legacy HTTP+SSE
  fallback). 401 and 403 are about credentials and are raised.

The answer is cached per server (command line, or HTTP origin) for the life
of the process; when the cached answer stops working the server is asked again.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Dict, Hashable, Optional, Tuple
from urllib.parse import urlsplit

from .._log import getLogger
from .. import _fork
from .._rpc.jsonrpc import METHOD_NOT_FOUND, JSONObject
from .._protocol.versions import (
    ALL_VERSIONS, LATEST_LEGACY_VERSION, LATEST_MODERN_VERSION, LEGACY_VERSIONS, MODERN_VERSIONS, best_common,
    is_modern,
)
from ..exceptions import (
    CrossOriginRedirect, HTTPStatusError, MCPError, ProtocolError, RequestTimeout, UnsupportedProtocolVersion,
)
from .errors import MISSING_CAPABILITY, MODERN_HTTP_ERRORS, UNSUPPORTED_VERSION, typed

log = getLogger("mcpsync.client")

AUTO, MODERN, LEGACY = "auto", "modern", "legacy"
DEFAULT_PROBE_TIMEOUT = 3.0

# How the session finds out a server's era, by the transport's kind (:func:`detection_for`).
PROBE = "probe"  # stdio and other byte streams: server/discover with a short timeout
HTTP = "http"  # Streamable HTTP: the modern request first, then read the 4xx body
HANDSHAKE = "legacy"  # always initialize (legacy HTTP+SSE, in-memory test doubles)
# Every kind not named here (stdio, the fake server's, a user's own transport) probes. A scripted
# memory peer answers what its test scripts (pass protocol= for another era).
_DETECTION = {"streamable-http": HTTP, "sse": HANDSHAKE, "memory": HANDSHAKE}


def detection_for(transport: Any) -> str:
    """How ``protocol="auto"`` finds the era of the server behind ``transport``: PROBE, HTTP or HANDSHAKE.

    The session decides this from the transport's ``kind``. A stand-in for another transport (a
    cassette's replay) says how the one it stands in for was detected, as ``era_detection``.
    """
    declared = getattr(transport, "era_detection", None)
    if declared in (PROBE, HTTP, HANDSHAKE):
        return str(declared)
    return _DETECTION.get(getattr(transport, "kind", ""), PROBE)


def check_protocol(protocol: str) -> str:
    """``protocol`` if it is "auto", "modern", "legacy" or a version we speak.

    Raises:
        ValueError: anything else.
    """
    if protocol in (AUTO, MODERN, LEGACY) or protocol in ALL_VERSIONS:
        return protocol
    raise ValueError(f"Unknown protocol {protocol!r}: expected 'auto', 'modern', 'legacy' or one of "
                     f"{', '.join(ALL_VERSIONS)}")


# -- the era cache -------------------------------------------------------------------------------


class EraCache:
    """Server key -> the era last found ("modern" or "legacy"). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._eras: Dict[Hashable, str] = {}
        _fork.watch(self, "_new_lock")

    def _new_lock(self) -> None:
        """In a forked child: a thread that held the lock at the fork does not exist there."""
        self._lock = threading.Lock()

    def get(self, key: Optional[Hashable]) -> Optional[str]:
        if key is None:
            return None
        with self._lock:
            return self._eras.get(key)

    def remember(self, key: Optional[Hashable], era: str) -> None:
        if key is not None:
            with self._lock:
                self._eras[key] = era

    def forget(self, key: Optional[Hashable]) -> None:
        if key is not None:
            with self._lock:
                self._eras.pop(key, None)

    def clear(self) -> None:
        """Forget every server (tests; or after upgrading servers in a long-lived process)."""
        with self._lock:
            self._eras.clear()


#: The process-wide cache every Client uses.
cache = EraCache()


def cache_key(transport: Any) -> Optional[Hashable]:
    """The cache key of a transport's server: its command line, or its URL's origin; None for others."""
    kind = getattr(transport, "kind", "")
    if kind == "stdio":
        return ("stdio", transport.command, tuple(transport.args), transport.cwd)
    url = getattr(transport, "url", None)
    if kind == "streamable-http" and isinstance(url, str):
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = None
        scheme = parts.scheme.lower()
        return ("http", scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme))
    return None


# -- recognising the answers -------------------------------------------------------------------------


def supported_versions(error: MCPError) -> Tuple[str, ...]:
    """The ``data.supported`` list of a ``-32022`` error (empty when absent or malformed)."""
    data = error.data if isinstance(error.data, dict) else {}
    supported = data.get("supported")
    return tuple(v for v in supported if isinstance(v, str)) if isinstance(supported, list) else ()


def is_discover_result(result: Any) -> bool:
    return isinstance(result, dict) and isinstance(result.get("supportedVersions"), list)


def http_error(exc: BaseException) -> Optional[MCPError]:
    """The JSON-RPC error a failed HTTP exchange carried in its body, if it carried one."""
    if isinstance(exc, MCPError):
        return exc
    if not isinstance(exc, HTTPStatusError) or not exc.body.strip():
        return None
    try:
        body = json.loads(exc.body)
    except (ValueError, RecursionError):  # a hostile body may nest deeper than the parser recurses
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or type(error.get("code")) is not int:
        return None
    return MCPError.from_wire(error, http_status=exc.status_code)


def is_modern_http_error(error: MCPError) -> bool:
    """A JSON-RPC error only a modern server sends over HTTP (a 4xx body, or an error its peer reports)."""
    if error.code == UNSUPPORTED_VERSION:
        return bool(supported_versions(error))
    if error.code in MODERN_HTTP_ERRORS:
        return error.http_status == 400
    return error.code == METHOD_NOT_FOUND and error.http_status == 404


def is_modern_refusal(exc: BaseException) -> bool:
    """Whether a refused ``initialize`` shows the server is modern: ``-32022`` listing a modern version."""
    error = http_error(exc)
    return error is not None and error.code == UNSUPPORTED_VERSION and best_common(
        supported_versions(error), MODERN_VERSIONS) is not None


# -- the negotiation --------------------------------------------------------------------------------

Discover = Callable[[str, Optional[float]], JSONObject]
Initialize = Callable[[str, bool, Optional[float]], None]
Adopt = Callable[[str, Optional[JSONObject]], None]


class Negotiation:
    """Runs one connection's era decision with the client's own operations.

    ``discover(version, timeout)`` sends ``server/discover`` and returns its
    result; ``initialize(version, exact, timeout)`` runs the legacy handshake;
    ``adopt(version, discover_result)`` makes the client modern (the result is
    None when a modern server would not describe itself).
    """

    def __init__(self, *, discover: Discover, initialize: Initialize, adopt: Adopt, detection: str,
                 key: Optional[Hashable], probe_timeout: float) -> None:
        self._discover = discover
        self._initialize = initialize
        self._adopt = adopt
        self._detection = detection
        self._key = key
        self._probe_timeout = probe_timeout

    def run(self, protocol: str, timeout: Optional[float]) -> None:
        if protocol == LEGACY or protocol in LEGACY_VERSIONS:
            self._initialize(protocol if protocol != LEGACY else LATEST_LEGACY_VERSION, protocol != LEGACY, timeout)
        elif protocol == MODERN or protocol in MODERN_VERSIONS:
            self._modern(protocol if protocol != MODERN else LATEST_MODERN_VERSION, timeout)
        elif self._detection == HANDSHAKE:
            self._initialize(LATEST_LEGACY_VERSION, False, timeout)
        else:
            self._auto(timeout)

    # -- forced modern -----------------------------------------------------------------------------

    def _modern(self, version: str, timeout: Optional[float], retried: bool = False) -> None:
        """``server/discover`` at ``version``; a ``-32022`` refusal is retried once at a version both speak."""
        try:
            result = self._discover(version, timeout)
        except MCPError as exc:
            supported = supported_versions(exc)
            if exc.code != UNSUPPORTED_VERSION or not supported:
                raise
            common = best_common(supported, MODERN_VERSIONS)
            if common is not None and not retried:
                # The server names what it speaks: retry once at the best version we share, even
                # the one just refused (a server may refuse a first request it could serve).
                log.info("server/discover at %s was refused with -32022 (supported: %s); retrying at %s",
                         version, ", ".join(supported), common)
                self._modern(common, timeout, retried=True)
                return
            offered = ", ".join(supported)
            message = None
            if common is not None:
                message = (f"The server refused protocol version {version!r} twice, although it lists "
                           f"{offered} as supported: the server's version negotiation is inconsistent")
            raise UnsupportedProtocolVersion(offered, MODERN_VERSIONS, message) from exc
        self._adopt_result(version, result)

    def _adopt_result(self, asked: str, result: JSONObject) -> None:
        offered = [v for v in result.get("supportedVersions", []) if isinstance(v, str)]
        version = asked if asked in offered else best_common(offered, MODERN_VERSIONS)
        if version is None:
            raise UnsupportedProtocolVersion(", ".join(offered) or "none", MODERN_VERSIONS)
        self._adopt(version, result)

    # -- auto ----------------------------------------------------------------------------------------

    def _auto(self, timeout: Optional[float]) -> None:
        known = cache.get(self._key)
        if known == LEGACY:
            try:
                self._initialize(LATEST_LEGACY_VERSION, False, timeout)
                return
            except (MCPError, HTTPStatusError) as exc:
                # A JSON-RPC refusal, whatever its code, says the cached answer stopped working: ask
                # again. (A bare HTTP status is the transport's business: its HTTP+SSE fallback.)
                if http_error(exc) is None:
                    raise
                log.info("A server cached as legacy refused initialize (%s); probing again", exc)
                cache.forget(self._key)
        # Known modern: the same request, but with the whole timeout (it is no longer a guess).
        self._probe(timeout, patient=known == MODERN)

    def _probe(self, timeout: Optional[float], patient: bool = False) -> None:
        http = self._detection == HTTP
        wait = timeout if http or patient else _shorter(self._probe_timeout, timeout)
        started = time.monotonic()
        try:
            result = self._discover(LATEST_MODERN_VERSION, wait)
        except RequestTimeout:
            if http:
                raise
            log.info("No answer to the server/discover probe within %gs: a legacy server", wait)
            if timeout is not None and time.monotonic() - started >= timeout:
                raise
            self._legacy(timeout)
            return
        except (MCPError, HTTPStatusError) as exc:
            if self._looks_modern(exc):
                self._modern_error(exc, timeout)
                return
            if isinstance(exc, CrossOriginRedirect) or (
                    isinstance(exc, HTTPStatusError) and (exc.status_code in (401, 403) or exc.status_code >= 500)):
                raise  # credentials, a redirect away or a broken server: never a reason to try the other era
            log.debug("The server/discover probe was refused (%s): a legacy server", exc)
            self._legacy(timeout)
            return
        except ProtocolError as exc:
            if http:
                raise
            log.debug("The server/discover probe got a malformed answer (%s): a legacy server", exc)
            self._legacy(timeout)
            return
        if not is_discover_result(result):
            # A server that answers a method it does not know with an empty success (some legacy
            # servers do, over HTTP too) is not describing itself: it gets the legacy handshake.
            log.debug("The server/discover probe got no DiscoverResult (%.80r): a legacy server", result)
            self._legacy(timeout)
            return
        self._modern_after_probe(result, timeout)

    def _looks_modern(self, exc: BaseException) -> bool:
        error = http_error(exc)
        if error is None:
            return False
        if self._detection == HTTP:
            return is_modern_http_error(error)
        return error.code == UNSUPPORTED_VERSION and bool(supported_versions(error))

    def _modern_after_probe(self, result: JSONObject, timeout: Optional[float]) -> None:
        offered = [v for v in result.get("supportedVersions", []) if isinstance(v, str)]
        if LATEST_MODERN_VERSION not in offered and best_common(offered, MODERN_VERSIONS) is None \
                and best_common(offered, LEGACY_VERSIONS) is not None:
            self._legacy(timeout)  # it describes itself, but speaks only legacy versions
            return
        self._adopt_result(LATEST_MODERN_VERSION, result)
        cache.remember(self._key, MODERN)

    def _modern_error(self, exc: BaseException, timeout: Optional[float]) -> None:
        """A modern server refused the probe: negotiate from its ``supported`` list, or raise."""
        error = http_error(exc)
        assert error is not None
        if error.code == MISSING_CAPABILITY:
            raise typed(error) from exc
        if error.code == METHOD_NOT_FOUND:  # modern, yet no server/discover: capabilities unknown
            cache.remember(self._key, MODERN)
            self._adopt(LATEST_MODERN_VERSION, None)
            return
        if error.code != UNSUPPORTED_VERSION:
            raise error from exc
        supported = supported_versions(error)
        version = best_common(supported, MODERN_VERSIONS)
        if version is not None:
            # Retry once at the best version both speak, even the one the probe asked for.
            self._modern(version, timeout, retried=True)
            cache.remember(self._key, MODERN)
        elif best_common(supported, LEGACY_VERSIONS) is not None:
            self._legacy(timeout)
        else:
            raise UnsupportedProtocolVersion(", ".join(supported), ALL_VERSIONS) from exc

    def _legacy(self, timeout: Optional[float]) -> None:
        try:
            self._initialize(LATEST_LEGACY_VERSION, False, timeout)
        except (MCPError, HTTPStatusError) as exc:
            # A modern-only server whose answer to the probe we missed (say it was slow to
            # start): it refuses initialize with -32022 naming its modern versions.
            if not is_modern_refusal(exc):
                raise
            error = http_error(exc)
            assert error is not None
            version = best_common(supported_versions(error), MODERN_VERSIONS) or LATEST_MODERN_VERSION
            self._modern(version, timeout)
            cache.remember(self._key, MODERN)
            return
        cache.remember(self._key, LEGACY)


def _shorter(a: float, b: Optional[float]) -> float:
    return a if b is None else min(a, b)


def era_of(version: Optional[str]) -> Optional[str]:
    """"modern" or "legacy" for a version (None before one is known)."""
    if version is None:
        return None
    return MODERN if is_modern(version) else LEGACY


__all__ = ["AUTO", "DEFAULT_PROBE_TIMEOUT", "EraCache", "LEGACY", "MODERN", "Negotiation", "cache", "cache_key",
           "check_protocol", "era_of", "http_error", "is_modern_http_error"]
