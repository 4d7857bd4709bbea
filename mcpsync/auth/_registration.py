"""Who the client is to an authorization server: pre-registered, a metadata document URL, or registered now.

The MCP spec's order (client registration §): pre-registered credentials
when the user gives them; else a Client ID Metadata Document URL when the
server supports those; else Dynamic Client Registration (RFC 7591) when it
has a registration endpoint. The token endpoint authentication method is
chosen from what the server supports.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple
from urllib.parse import urlsplit

from ..exceptions import AuthError
from ._discovery import AuthServer
from ._errors import server_error
from ._fetch import Fetcher

__all__ = ["ClientIdentity", "application_type", "choose_auth_method", "register"]

log = logging.getLogger("mcpsync.auth")

SECRET_METHODS = ("client_secret_basic", "client_secret_post")


@dataclass(frozen=True)
class ClientIdentity:
    """A client as one authorization server knows it. Its ``repr`` shows no secret.

    Attributes:
        client_id: the client id (for a metadata document, its URL).
        client_secret: the secret, for ``client_secret_*`` methods.
        auth_method: ``client_secret_basic``, ``client_secret_post``, ``none`` or ``private_key_jwt``.
        redirect_uris: the registered redirect URIs (dynamic registration).
        source: ``static`` (given by the user), ``cimd`` or ``dcr``.
    """

    client_id: str
    client_secret: Optional[str] = field(default=None, repr=False)
    auth_method: str = "none"
    redirect_uris: Tuple[str, ...] = ()
    source: str = "static"

    def __repr__(self) -> str:
        secret = " secret=[redacted]" if self.client_secret else ""
        return f"<ClientIdentity {self.client_id!r} {self.auth_method} ({self.source}){secret}>"

    def to_dict(self) -> Dict[str, Any]:
        """The stored form (a static client's secret is the user's: it is not stored)."""
        return {"client_id": self.client_id, "auth_method": self.auth_method, "source": self.source,
                "redirect_uris": list(self.redirect_uris),
                "client_secret": self.client_secret if self.source == "dcr" else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["ClientIdentity"]:
        """The client in a stored dict, or None if it is malformed."""
        client_id, method, source = data.get("client_id"), data.get("auth_method"), data.get("source")
        if not isinstance(client_id, str) or not isinstance(method, str) or not isinstance(source, str):
            return None
        secret, uris = data.get("client_secret"), data.get("redirect_uris")
        return cls(client_id, secret if isinstance(secret, str) else None, method,
                   tuple(u for u in uris if isinstance(u, str)) if isinstance(uris, list) else (), source)


def choose_auth_method(server: AuthServer, has_secret: bool) -> str:
    """The token endpoint authentication method for a client with (or without) a secret.

    ``client_secret_basic`` is preferred, then ``client_secret_post``; a server
    that lists no methods gets RFC 8414's default, ``client_secret_basic``.

    Raises:
        AuthError: (``unsupported_auth_method``) the client has a secret but the
            server accepts neither way of sending it.
    """
    if not has_secret:
        return "none"
    supported = server.auth_methods
    if supported is None:
        return "client_secret_basic"
    for method in SECRET_METHODS:
        if method in supported:
            return method
    raise AuthError(f"The authorization server {server.issuer} accepts none of {', '.join(SECRET_METHODS)} "
                    f"(it lists {', '.join(supported) or 'nothing'}) for a client secret",
                    error="unsupported_auth_method")


def application_type(redirect_uris: Sequence[str]) -> str:
    """The OIDC ``application_type`` a registration states (required since 2026-07-28).

    ``"web"`` for a remote browser application: every redirect URI is https on a host
    that is not this machine. Otherwise ``"native"``: loopback redirects (the login
    mcpsync runs itself), ``localhost``, or an application's own URI scheme.
    """
    def remote(uri: str) -> bool:
        parts = urlsplit(uri)
        host = (parts.hostname or "").rstrip(".").lower()
        if parts.scheme.lower() != "https" or not host or host == "localhost" or host.endswith(".localhost"):
            return False
        try:
            return not ipaddress.ip_address(host).is_loopback
        except ValueError:
            return True  # a name other than localhost

    return "web" if redirect_uris and all(remote(uri) for uri in redirect_uris) else "native"


def register(fetch: Fetcher, server: AuthServer, *, redirect_uris: Sequence[str], client_name: str,
             scope: Optional[str]) -> ClientIdentity:
    """Register a native (loopback redirect) client with ``server`` (RFC 7591).

    A public client (``none``) is asked for when the server allows it,
    otherwise a confidential one with the method the server prefers.

    Raises:
        AuthError: the server has no registration endpoint (``registration_unsupported``)
            or refused the registration.
        ConnectError, TransportError, RequestTimeout: the request failed.
    """
    endpoint = server.registration_endpoint
    if endpoint is None:
        raise AuthError(f"The authorization server {server.issuer} supports neither client ID metadata documents "
                        "nor dynamic client registration: pass client_id= (and client_secret=) of a client "
                        "registered with it", error="registration_unsupported")
    method = _registration_method(server.auth_methods)
    body: Dict[str, Any] = {
        "client_name": client_name, "redirect_uris": list(redirect_uris),
        "application_type": application_type(redirect_uris),
        "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        "token_endpoint_auth_method": method,
    }
    if scope:
        body["scope"] = scope
    status, document = fetch.post_json(endpoint, body)
    if status not in (200, 201) or not isinstance(document, dict) or not isinstance(document.get("client_id"), str):
        raise server_error(f"Dynamic client registration with {server.issuer}", status, document,
                           default="registration_failed")
    log.info("Registered a client with %s (dynamic client registration)", server.issuer)
    return _registered(document, method, redirect_uris)


def _registration_method(supported: Optional[Sequence[str]]) -> str:
    """The client authentication to ask for: public (``none``) when allowed, else the first secret method offered."""
    if supported is None or "none" in supported:
        return "none"
    return next((m for m in SECRET_METHODS if m in supported), "none")


def _registered(document: Dict[str, Any], method: str, redirect_uris: Sequence[str]) -> ClientIdentity:
    """The client a registration answer describes; what it leaves out is what we asked for."""
    secret = document.get("client_secret")
    secret = secret if isinstance(secret, str) and secret else None
    granted = document.get("token_endpoint_auth_method")
    if not isinstance(granted, str):
        granted = method if secret or method == "none" else "none"
    uris = document.get("redirect_uris")
    return ClientIdentity(document["client_id"], secret, granted,
                          tuple(u for u in uris if isinstance(u, str)) if isinstance(uris, list)
                          else tuple(redirect_uris), "dcr")
