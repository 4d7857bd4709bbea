"""Discovery: from an MCP server URL (and its 401 challenge) to the authorization server's endpoints.

Order, as the MCP authorization spec gives it:

1. Protected resource metadata (RFC 9728): the ``resource_metadata`` URL of
   the challenge, else the path-aware well-known URL, then the root one. Its
   ``resource`` must be the server's URL (or a parent of it on the same
   origin); anything else is refused.
2. Authorization server metadata for the first ``authorization_servers``
   entry: RFC 8414 and OpenID Connect discovery, path insertion first. The
   document's ``issuer`` must equal the issuer exactly, or it is not used.
3. A server without protected resource metadata (2025-03-26) has its
   authorization server at its own origin: the metadata there, else the
   default endpoints ``/authorize``, ``/token`` and ``/register``.

Blocking I/O through a :class:`~mcpsync.auth._fetch.Fetcher`; no threads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ..exceptions import AuthError
from ._challenge import Challenge
from ._fetch import Fetcher
from ._urls import authorization_server_urls, canonical_resource, check_url, covers, protected_resource_urls

__all__ = ["AuthServer", "Discovery", "discover", "discover_authorization_server"]

log = logging.getLogger("mcpsync.auth")

LEGACY_VERSION = "2025-03-26"


@dataclass(frozen=True)
class AuthServer:
    """An authorization server, as its (validated) metadata describes it.

    ``from_metadata`` is False for a 2025-03-26 server without metadata, whose
    endpoints are the spec's defaults at the MCP server's origin.
    """

    issuer: str
    token_endpoint: str
    authorization_endpoint: Optional[str] = None
    registration_endpoint: Optional[str] = None
    scopes_supported: Optional[Tuple[str, ...]] = None
    code_challenge_methods: Optional[Tuple[str, ...]] = None
    auth_methods: Optional[Tuple[str, ...]] = None
    cimd_supported: bool = False
    iss_parameter_supported: bool = False
    from_metadata: bool = True
    dpop_algs: Optional[Tuple[str, ...]] = None  # dpop_signing_alg_values_supported (RFC 9449 §5.1)

    @classmethod
    def from_document(cls, document: Mapping[str, Any], issuer: str) -> "AuthServer":
        """Validate a metadata document whose ``issuer`` was already checked.

        Raises:
            AuthError: an endpoint is missing or unsafe.
        """
        def endpoint(name: str, required: bool = False) -> Optional[str]:
            value = document.get(name)
            if value is None and not required:
                return None
            return check_url(value, f"{name} of {issuer}")

        return cls(
            issuer=issuer,
            token_endpoint=str(endpoint("token_endpoint", required=True)),
            authorization_endpoint=endpoint("authorization_endpoint"),
            registration_endpoint=endpoint("registration_endpoint"),
            scopes_supported=_strings(document.get("scopes_supported")),
            code_challenge_methods=_strings(document.get("code_challenge_methods_supported")),
            auth_methods=_strings(document.get("token_endpoint_auth_methods_supported")),
            cimd_supported=document.get("client_id_metadata_document_supported") is True,
            iss_parameter_supported=document.get("authorization_response_iss_parameter_supported") is True,
            dpop_algs=_strings(document.get("dpop_signing_alg_values_supported")),
        )

    @classmethod
    def defaults(cls, base: str) -> "AuthServer":
        """The 2025-03-26 default endpoints at ``base`` (PKCE S256 is mandatory there, so assumed)."""
        return cls(issuer=base, token_endpoint=f"{base}/token", authorization_endpoint=f"{base}/authorize",
                   registration_endpoint=f"{base}/register", code_challenge_methods=("S256",), from_metadata=False)


@dataclass(frozen=True)
class Discovery:
    """Everything discovery found for one MCP server.

    Attributes:
        resource: the resource indicator to send (the metadata's ``resource``,
            or the server's canonical URI when there is no metadata).
        resource_scopes: the protected resource's ``scopes_supported``, if any.
        server: the authorization server.
        metadata_url: where the protected resource metadata came from (None: legacy).
    """

    resource: str
    resource_scopes: Optional[Tuple[str, ...]]
    server: AuthServer
    metadata_url: Optional[str]


def discover(fetch: Fetcher, server_url: str, challenge: Challenge, prefer: Optional[str] = None) -> Discovery:
    """Run discovery for the MCP server at ``server_url``.

    ``prefer`` (a pinned issuer) is chosen among the metadata's
    ``authorization_servers`` when it is listed; otherwise the first is.

    Raises:
        AuthError: the metadata names another resource (``resource_mismatch``),
            no authorization server could be found (``discovery_failed``), an
            issuer does not match (``issuer_mismatch``), or a URL is unsafe.
        ConnectError, TransportError, RequestTimeout: a request failed.
    """
    urls = protected_resource_urls(server_url)
    if challenge.resource_metadata:
        urls.insert(0, check_url(challenge.resource_metadata, "resource_metadata URL"))
    for url in urls:
        status, document = fetch.get_json(url)
        if status == 200 and isinstance(document, dict):
            return _from_resource_metadata(fetch, server_url, url, document, prefer)
        log.debug("No protected resource metadata at %s (HTTP %d)", url, status)
    return _legacy(fetch, server_url)


def _from_resource_metadata(fetch: Fetcher, server_url: str, url: str, document: Dict[str, Any],
                            prefer: Optional[str]) -> Discovery:
    resource = document.get("resource")
    if not isinstance(resource, str) or not covers(resource, server_url):
        raise AuthError(f"The protected resource metadata at {url} is for {resource!r}, not for the MCP server "
                        f"{canonical_resource(server_url)!r}; refusing to authorize with it", error="resource_mismatch")
    issuer = check_url(_chosen_server(document, url, prefer), "authorization server")
    server = discover_authorization_server(fetch, issuer)
    if server is None:
        raise AuthError(f"No authorization server metadata found for {issuer} (tried RFC 8414 and OpenID Connect "
                        "discovery)", error="discovery_failed")
    log.info("Authorization server for %s: %s", canonical_resource(server_url), issuer)
    return Discovery(resource=resource, resource_scopes=_strings(document.get("scopes_supported")), server=server,
                     metadata_url=url)


def _chosen_server(document: Dict[str, Any], url: str, prefer: Optional[str]) -> str:
    """The authorization server the metadata lists that matches ``prefer``, else its first."""
    servers = document.get("authorization_servers")
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) for s in servers):
        raise AuthError(f"The protected resource metadata at {url} lists no authorization server",
                        error="discovery_failed")
    listed: List[str] = servers
    wanted = prefer.rstrip("/") if prefer is not None else None
    return next((s for s in listed if s.rstrip("/") == wanted), listed[0])


def discover_authorization_server(fetch: Fetcher, issuer: str,
                                  headers: Optional[Mapping[str, str]] = None) -> Optional[AuthServer]:
    """The metadata of ``issuer`` from the first well-known URL that has it, or None.

    A document whose ``issuer`` is not exactly ``issuer`` is not used.

    Raises:
        AuthError: (``issuer_mismatch``) documents were found but none named ``issuer``.
    """
    named = None
    for url in authorization_server_urls(issuer):
        status, document = fetch.get_json(url, headers)
        if status != 200 or not isinstance(document, dict):
            log.debug("No authorization server metadata at %s (HTTP %d)", url, status)
            continue
        if document.get("issuer") != issuer:
            named = document.get("issuer")
            log.warning("Ignoring the metadata at %s: it names the issuer %r, not %r", url, named, issuer)
            continue
        return AuthServer.from_document(document, issuer)
    if named is not None:
        raise AuthError(f"The authorization server metadata for {issuer} names the issuer {named!r}; "
                        "refusing to use it", error="issuer_mismatch")
    return None


def _legacy(fetch: Fetcher, server_url: str) -> Discovery:
    parts = urlsplit(canonical_resource(server_url))
    base = f"{parts.scheme}://{parts.netloc}"
    log.info("%s has no protected resource metadata; looking for its authorization server at %s (2025-03-26)",
             canonical_resource(server_url), base)
    server = discover_authorization_server(fetch, base, {"MCP-Protocol-Version": LEGACY_VERSION})
    if server is None:
        log.info("No authorization server metadata at %s; using the default endpoints", base)
        server = AuthServer.defaults(base)
    return Discovery(resource=canonical_resource(server_url), resource_scopes=None, server=server, metadata_url=None)


def _strings(value: Any) -> Optional[Tuple[str, ...]]:
    if not isinstance(value, list):
        return None
    return tuple(item for item in value if isinstance(item, str))
