"""URLs as the HTTP transports and the auth flow see them: origins, loggable forms, default names.

Pure string handling, no I/O and no HTTP library. A URL may carry secrets in its
userinfo or query, so every URL that reaches a log line, an exception message or
a thread name goes through :func:`display_url` or :func:`default_name` first.
"""

from __future__ import annotations

from typing import Optional, Tuple
from urllib.parse import urlsplit

__all__ = ["Origin", "default_name", "display_url", "origin", "origin_text", "same_origin"]

#: (scheme, host, port), lower-cased, with the scheme's default port filled in.
Origin = Tuple[str, str, Optional[int]]

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> Origin:
    """(scheme, host, port) with default ports filled in; an unparsable port counts as none."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def same_origin(a: str, b: str) -> bool:
    """Whether two URLs share scheme, host and port (default ports filled in)."""
    return origin(a) == origin(b)


def origin_text(url: str) -> str:
    """The origin of ``url`` as people write it (``https://example.com:8443``), for messages."""
    scheme, host, port = origin(url)
    if ":" in host:
        host = f"[{host}]"
    shown = f"{scheme}://{host}"
    return shown if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{shown}:{port}"


def display_url(url: str) -> str:
    """A loggable form of ``url``: scheme, host, port and path; no userinfo, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port: Optional[object] = parts.port
    except ValueError:  # an unreadable port (a hostile redirect's, say) is shown as such, never raised
        port = "?"
    if port is not None:
        host = f"{host}:{port}"
    return f"{parts.scheme}://{host}{parts.path}"


def default_name(url: str) -> str:
    """A label for logs and threads: the URL's host and port (``example.com_8443``)."""
    parts = urlsplit(url)
    return f"{parts.hostname or 'http'}{'_' + str(parts.port) if parts.port else ''}"
