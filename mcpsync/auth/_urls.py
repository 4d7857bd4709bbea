"""URLs of the authorization dance: canonical resource URIs, well-known metadata locations, URL hygiene.

Pure string handling. Every URL a server hands us (metadata locations,
endpoints, the authorization URL we open in a browser) passes
:func:`check_url` first: ``https``, or ``http`` only on a loopback host (for
development), never ``javascript:``, ``file:`` or the like, never with
credentials in it.
"""

from __future__ import annotations

import ipaddress
from typing import List, Mapping, Optional
from urllib.parse import urlencode, urlsplit, urlunsplit

from ..exceptions import AuthError
from ..transports._urls import origin, same_origin

__all__ = [
    "authorization_server_urls", "canonical_resource", "check_url", "covers", "is_loopback", "protected_resource_urls",
    "same_origin", "with_query",
]


def is_loopback(host: Optional[str]) -> bool:
    """Whether ``host`` names this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: object, what: str) -> str:
    """``url`` if it is safe to use for ``what``, else raise.

    Raises:
        AuthError: (``unsafe_url``) not a string, not https (http is allowed
            only for a loopback host), no host, or user credentials in it.
    """
    if not isinstance(url, str) or not url:
        raise AuthError(f"The {what} is missing or not a string", error="unsafe_url")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.hostname:
        raise AuthError(f"Refusing the {what} {_shown(url)}: only https URLs are allowed", error="unsafe_url")
    if scheme == "http" and not is_loopback(parts.hostname):
        raise AuthError(f"Refusing the {what} {_shown(url)}: plain http is allowed only for localhost",
                        error="unsafe_url")
    if parts.username is not None or parts.password is not None:
        raise AuthError(f"Refusing the {what}: it carries user credentials", error="unsafe_url")
    return url


def _shown(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme.lower() in ("http", "https"):
        return repr(urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", "")))
    return repr(parts.scheme + ":...")


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707 as the MCP spec applies it).

    Lower-case scheme and host, no default port, no query, no fragment, no
    trailing slash: ``HTTPS://Example.com:443/mcp/`` gives ``https://example.com/mcp``.
    """
    parts = urlsplit(url)
    scheme, host, port = origin(url)
    if ":" in host:
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    netloc = host if port is None or port == default else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def covers(resource: str, server_url: str) -> bool:
    """Whether protected resource metadata for ``resource`` may speak for ``server_url``.

    True when they are the same canonical URI, or when ``resource`` is on the
    same origin and its path is a parent of the server's (on a ``/`` boundary).
    """
    have, want = canonical_resource(resource), canonical_resource(server_url)
    if have == want:
        return True
    if not same_origin(have, want):
        return False
    parent = urlsplit(have).path
    return urlsplit(want).path.startswith(parent + "/")


def protected_resource_urls(server_url: str) -> List[str]:
    """Where RFC 9728 metadata may be, in the spec's order: path-aware, then the root."""
    canonical = canonical_resource(server_url)
    parts = urlsplit(canonical)
    base = f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource"
    return [base + parts.path, base] if parts.path else [base]


def authorization_server_urls(issuer: str) -> List[str]:
    """Where an authorization server's metadata may be, in the MCP spec's order.

    With a path (``https://as/tenant``): RFC 8414 with path insertion, OIDC
    with path insertion, OIDC appended to the issuer. Without: RFC 8414, OIDC.
    """
    parts = urlsplit(issuer)
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [f"{root}/.well-known/oauth-authorization-server", f"{root}/.well-known/openid-configuration"]
    return [f"{root}/.well-known/oauth-authorization-server{path}", f"{root}/.well-known/openid-configuration{path}",
            f"{root}{path}/.well-known/openid-configuration"]


def with_query(url: str, params: Mapping[str, Optional[str]]) -> str:
    """``url`` with ``params`` (None values left out) added to its query string."""
    parts = urlsplit(url)
    extra = urlencode([(k, v) for k, v in params.items() if v is not None])
    query = f"{parts.query}&{extra}" if parts.query else extra
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))
