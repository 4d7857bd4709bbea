"""What HTTP answers mean to the transports: bodies read within limits, statuses and failures as mcpsync errors.

This module is the one boundary where ``requests``/``urllib3``/``OSError``
exceptions become mcpsync exceptions (:func:`translate`), always chained with
``from`` by the caller; ``requests`` and ``urllib3`` are imported only when a
failure has to be translated. The functions take a ``requests.Response`` and
never keep it; they run on the thread that reads the response and are safe to
call from any number of such threads at once.
"""

from __future__ import annotations

import codecs
import re
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple, Type

from ..exceptions import (
    ConnectError, ConnectionLost, HTTPStatusError, MCPSyncError, ProtocolError, RequestTimeout, ServerUnreachable,
    TransportError,
)
from ._html import element_content, strip_hidden, strip_tags
from ._http_session import REDIRECT_BODY_LIMIT
from ._urls import display_url

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = [
    "BODY_EXCERPT", "DEFAULT_MAX_MESSAGE_SIZE", "READ_CHUNK", "answers", "body_summary", "endpoint_advice",
    "iter_chunks", "media_type", "not_an_endpoint", "read_body", "read_text", "status_error", "translate",
]

#: The largest JSON body or SSE event accepted by default, in bytes.
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
#: How much one read of a streamed body asks for.
READ_CHUNK = 256 * 1024
#: How much of an error body an HTTPStatusError's message quotes.
BODY_EXCERPT = 500


def media_type(response: "requests.Response") -> str:
    """The Content-Type without parameters, lower-cased ("" when absent)."""
    return str(response.headers.get("Content-Type", "")).split(";", 1)[0].strip().lower()


def iter_chunks(response: "requests.Response", chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
    """The (decoded) body as it arrives: each chunk is whatever one read returned."""
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if read1 is None:  # urllib3 1.x
        yield from raw.stream(chunk_size, decode_content=True)
        return
    while True:
        chunk = read1(chunk_size, decode_content=True)
        if not chunk:
            return
        yield chunk


def read_body(response: "requests.Response", limit: int, what: str) -> bytes:
    """The whole body, refusing one larger than ``limit`` bytes without holding it.

    Raises:
        ProtocolError: the body is larger than ``limit``.
    """
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProtocolError(f"{what} is larger than max_message_size ({int(declared)} > {limit} bytes)")
    parts: List[bytes] = []
    size = 0
    for chunk in iter_chunks(response):
        size += len(chunk)
        if size > limit:
            raise ProtocolError(f"{what} is larger than max_message_size ({limit} bytes)")
        parts.append(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_text(response: "requests.Response", limit: int, what: str) -> str:
    """The whole body as UTF-8 text, refusing one larger than ``limit`` bytes without holding it.

    Each chunk is decoded as it arrives, so the body is never held as bytes and as text at
    once: a large JSON answer is then held twice while it is parsed (text and value), not
    three times.

    Raises:
        ProtocolError: the body is larger than ``limit``, or is not UTF-8.
    """
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ProtocolError(f"{what} is larger than max_message_size ({int(declared)} > {limit} bytes)")
    decode = codecs.getincrementaldecoder("utf-8")().decode
    parts: List[str] = []
    size = 0
    try:
        for chunk in iter_chunks(response):
            size += len(chunk)
            if size > limit:
                raise ProtocolError(f"{what} is larger than max_message_size ({limit} bytes)")
            parts.append(decode(chunk))
        parts.append(decode(b"", True))
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what} is not valid UTF-8: {exc}") from exc
    text = parts[0] if len(parts) == 1 else "".join(parts)
    parts.clear()
    return text


def status_error(response: "requests.Response", *, cls: Type[HTTPStatusError] = HTTPStatusError,
                 prefix: str = "", raw: Optional[bytes] = None, first: str = "") -> HTTPStatusError:
    """``HTTP <status>: <body summary>`` plus the auth hints, as an HTTPStatusError (or ``cls``).

    ``raw`` is the body when the caller has already read it. A redirect that comes
    back here was not followed (too large a body, or a status requests does not
    follow); one to another origin never does: the session's gate raised
    :class:`~mcpsync.exceptions.CrossOriginRedirect` for it.
    An HTML body is summarised by its title, never quoted (see :func:`body_summary`).
    ``first`` is the HTTP method (``"POST"``, ``"GET"``) when this answered the
    connection's first exchange, before the server ever answered 2xx: then a status
    that says "no MCP endpoint here" (404, 405, 501...) gets :func:`endpoint_advice`.
    """
    if 300 <= response.status_code < 400 and response.headers.get("Location"):
        prefix += _unfollowed(response)
        raw = b""  # the body was read, within the bound, or is too large to quote
    try:
        if raw is None:
            raw = read_body(response, 64 * 1024, "error body")
        body = raw.decode("utf-8", errors="replace")
    except Exception:  # the body is only decoration: the status is the error
        body = ""
    text = body_summary(body, media_type(response))
    message = f"{prefix}HTTP {response.status_code}: {text}" if text else f"{prefix}HTTP {response.status_code}"
    if first:
        message += endpoint_advice(response.url or "", first, response.status_code)
    message += _auth_hints(response)
    return cls(message, status_code=response.status_code, headers=dict(response.headers), body=body[:64 * 1024])




def _unfollowed(response: "requests.Response") -> str:
    """The words for a redirect that came back unfollowed, naming where it pointed."""
    from urllib.parse import urljoin  # noqa: PLC0415 (only a redirect that was not followed needs it)

    shown = display_url(urljoin(response.url or "", response.headers["Location"]))
    if not shown.isprintable():  # a hostile Location's control characters are shown escaped
        shown = ascii(shown)
    return (f"A redirect to {shown} was not followed (a redirect's body may be at most "
            f"{REDIRECT_BODY_LIMIT} bytes, and only 301, 302, 303, 307 and 308 are followed): ")


def _auth_hints(response: "requests.Response") -> str:
    """`` (WWW-Authenticate: ...; Mcp-Auth-Server: ...)`` for those the response carries, or ""."""
    hints = [f"{name}: {response.headers[name]}" for name in ("WWW-Authenticate", "Mcp-Auth-Server")
             if response.headers.get(name)]
    return " (" + "; ".join(hints) + ")" if hints else ""


def body_summary(body: str, kind: str = "") -> str:
    """An error body in a few words: an HTML page by its title (or first heading), never its markup;
    any other body collapsed to one line of at most :data:`BODY_EXCERPT` characters."""
    start = body.lstrip()[:200].lower()
    if kind in ("text/html", "application/xhtml+xml") or start.startswith(("<!doctype html", "<html", "<head")):
        import html  # noqa: PLC0415 (only an HTML error page needs it)

        raw = body.encode("utf-8", errors="replace")
        for element in (b"title", b"h1"):  # linear scans: the page is the server's (see _html)
            found = element_content(raw, element, 64 * 1024)
            if found is not None:
                title = _words(html.unescape(strip_tags(found.decode("utf-8", "replace"), "")))
                if title:
                    return f"an HTML page titled {title[:100]!r}"
        text = _words(html.unescape(strip_tags(strip_hidden(body[:64 * 1024], " "), " ")))
        if text:
            return f"an HTML page saying {text[:100] + '...' if len(text) > 100 else text!r}"
        return "an HTML page (not shown)"
    text = " ".join(body.split())
    return text[:BODY_EXCERPT] + "..." if len(text) > BODY_EXCERPT else text


def _words(text: str) -> str:
    """``text`` as one line of printable words: blanks and anything unprintable (controls, invisible
    format characters) become single spaces. The summary quotes at most 100 characters with ``repr``,
    which shows an unprintable one as up to ten (``\\U000e0001``): kept, a page of them made the
    one-line summary a kilobyte of escapes."""
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


#: Statuses that, on a connection's first exchange, mean nothing serves MCP at that URL.
_NO_ENDPOINT = {404: "Not Found", 405: "Method Not Allowed", 501: "Not Implemented", 410: "Gone"}


def endpoint_advice(url: str, method: str, status: int) -> str:
    """What to tell a user whose first ``method`` request to ``url`` got ``status`` ("" when it says nothing)."""
    if status not in _NO_ENDPOINT:
        return ""
    where = display_url(url)
    if status in (405, 501):
        return (f". {where} does not look like an MCP endpoint: it does not take {method} requests "
                f"({status} {_NO_ENDPOINT[status]}), and MCP's transports need them. {usual_urls(url)}")
    return f". Nothing answers MCP at {where} ({status} {_NO_ENDPOINT[status]}). {usual_urls(url)}"


def usual_urls(url: str) -> str:
    """The sentence that suggests the paths MCP servers are usually served at, on ``url``'s origin."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    parts = urlsplit(url)
    origin = f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"
    tried = parts.path.rstrip("/")
    usual = [(f"{origin}/mcp", "Streamable HTTP"), (f"{origin}/sse", "the legacy HTTP+SSE transport")]
    others = [f"{address} ({kind})" for address, kind in usual if urlsplit(address).path != tried]
    return "Check the URL's path: MCP servers are usually served at " + " or ".join(others)


def not_an_endpoint(url: str, first: HTTPStatusError, second: HTTPStatusError) -> HTTPStatusError:
    """The error for a URL where both Streamable HTTP (``first``, its POST) and the legacy HTTP+SSE
    fallback (``second``, its GET) were refused: both attempts and both statuses, once, with advice."""
    summary = body_summary(second.body, str(second.headers.get("Content-Type", "")).split(";")[0].strip().lower())
    if type(second) is not HTTPStatusError:
        return second
    both = (f"both got HTTP {first.status_code}" if first.status_code == second.status_code
            else f"got HTTP {first.status_code} and HTTP {second.status_code}")
    message = (f"No MCP endpoint at {display_url(url)}: Streamable HTTP (POST) and then the legacy HTTP+SSE "
               f"transport (GET) {both}" + (f" ({summary})" if summary else "") + f". {usual_urls(url)}")
    return HTTPStatusError(message, status_code=second.status_code, headers=second.headers, body=second.body)


def translate(exc: BaseException, url: str) -> MCPSyncError:
    """Map a requests/urllib3/OS error to the most specific mcpsync exception (chain it with ``from``).

    A connection that could not be made (refused, timed out) is :class:`~mcpsync.ServerUnreachable`
    with ``may_have_reached_server`` False; one that broke once made is
    :class:`~mcpsync.ConnectionLost` (the request may have reached the server). Whether a
    request really left is for the transport to record in its engine's ledger.
    """
    if isinstance(exc, MCPSyncError):
        return exc
    # Lazy: ``import mcpsync`` must not load the HTTP stack (only an HTTP failure gets here).
    import requests  # noqa: PLC0415

    where = display_url(url)
    if isinstance(exc, requests.exceptions.RequestException):
        return _from_requests(exc, url, where)
    import http.client  # noqa: PLC0415 (lazy, as above)

    from urllib3.exceptions import HTTPError as Urllib3Error, ReadTimeoutError  # noqa: PLC0415

    if isinstance(exc, ReadTimeoutError):
        return RequestTimeout(f"HTTP read from {where} timed out")
    if isinstance(exc, (Urllib3Error, http.client.HTTPException, OSError)):
        return ConnectionLost(f"Connection to {where} lost: {_lost_reason(exc)}")
    return TransportError(f"HTTP exchange with {where} failed: {type(exc).__name__}: {exc}")


def _from_requests(exc: "requests.RequestException", url: str, where: str) -> MCPSyncError:
    """:func:`translate` for one of requests' own errors."""
    import requests  # noqa: PLC0415 (loaded already: ``exc`` is one of its errors)

    if isinstance(exc, requests.exceptions.ConnectionError):
        return _from_connection_error(exc, url, where)
    if isinstance(exc, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema,
                        requests.exceptions.InvalidSchema)):
        return ConnectError(f"Invalid URL {where}: {_reason(exc)}")
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return RequestTimeout(f"HTTP read from {where} timed out")
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return ConnectionLost(f"Connection to {where} lost: {_lost_reason(exc)}")
    if isinstance(exc, requests.exceptions.InvalidHeader):
        return TransportError(f"HTTP request to {where} not sent: {_refused_header(exc)} has a line break, control "
                              "character or leading whitespace that HTTP does not allow (its value is not shown); "
                              "fix the header")
    return TransportError(f"HTTP request to {where} failed: {_reason(exc)}")


def _from_connection_error(exc: "requests.ConnectionError", url: str, where: str) -> MCPSyncError:
    """:func:`translate` for requests' ConnectionError and its kinds (TLS, connect timeout, proxy)."""
    import requests  # noqa: PLC0415 (loaded already: ``exc`` is one of its errors)
    from urllib3.exceptions import ConnectTimeoutError, NewConnectionError  # noqa: PLC0415

    if isinstance(exc, requests.exceptions.SSLError):
        return ConnectError(f"TLS error talking to {where}: {_tls_reason(exc)}")
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return ServerUnreachable(f"Cannot connect to {where}: {_connect_reason(exc, url)}",
                                 may_have_reached_server=False)
    if isinstance(exc, requests.exceptions.ProxyError):
        return ConnectError(f"Cannot connect to {where} through the proxy: {_connect_reason(exc, url)} (check "
                            "the HTTPS_PROXY/HTTP_PROXY settings, or pass trust_env=False to ignore them)")
    reason = exc.args[0] if exc.args else None
    cause = getattr(reason, "reason", reason)
    if isinstance(cause, (NewConnectionError, ConnectTimeoutError, ConnectionRefusedError)):
        return ServerUnreachable(f"Cannot connect to {where}: {_connect_reason(exc, url)}",
                                 may_have_reached_server=False)
    return ConnectionLost(f"Connection to {where} lost: {_lost_reason(exc)}")


def _refused_header(exc: BaseException) -> str:
    """``header 'Name'`` for the header requests refused (``a header`` if it cannot be told).

    requests quotes the refused value (often a token): the header is named, its value never shown.
    The name is found in requests.utils.check_header_validity's ``header`` (name, value) local.
    """
    tb, header = exc.__traceback__, None
    while tb is not None and header is None:
        frame = tb.tb_frame
        found = frame.f_locals.get("header") if frame.f_globals.get("__name__") == "requests.utils" else None
        header, tb = (found if isinstance(found, tuple) and len(found) == 2 else None), tb.tb_next
    return f"header {str(header[0])!r}" if header is not None else "a header"


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: requests' first argument, urllib3's ``reason``, causes and contexts."""
    seen: List[BaseException] = []
    todo = [exc]
    while todo and len(seen) < 12:
        current = todo.pop(0)
        if any(current is known for known in seen):
            continue
        seen.append(current)
        yield current
        inner = [getattr(current, "reason", None), *current.args, current.__cause__, current.__context__]
        todo.extend(item for item in inner if isinstance(item, BaseException))


def _connect_reason(exc: BaseException, url: str) -> str:
    """Why a connection could not be made, in words (never urllib3's pool and connection reprs)."""
    host, where = _host_port(url)
    return _unreachable(exc, host, where) or _slow_to_accept(exc, where) or _os_reason(exc, where) or _reason(exc)


def _host_port(url: str) -> Tuple[str, str]:
    """``(host, "host:port")`` of ``url``, for a message (``[host]:port`` for an IPv6 address)."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    except ValueError:
        port = 0
    return host, (f"[{host}]:{port}" if ":" in host else f"{host}:{port}")


def _unreachable(exc: BaseException, host: str, where: str) -> str:
    """Why no connection could be made, if anything in ``exc``'s chain says the host could not be
    found, refused it or has no route ("" if nothing does)."""
    import errno  # noqa: PLC0415
    import socket  # noqa: PLC0415

    for inner in _chain(exc):
        if isinstance(inner, socket.gaierror):
            return f"the host name {host!r} could not be resolved ({inner.strerror or inner}); check the URL's host"
        if isinstance(inner, ConnectionRefusedError) or getattr(inner, "errno", None) == errno.ECONNREFUSED:
            return (f"nothing is listening on {where} (connection refused); is the server running, and on this "
                    "host and port?")
        if getattr(inner, "errno", None) in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return f"there is no network route to {where} ({getattr(inner, 'strerror', None) or inner})"
    return ""


def _slow_to_accept(exc: BaseException, where: str) -> str:
    """The words for a connect that timed out, if one in ``exc``'s chain did ("" if none did)."""
    import errno  # noqa: PLC0415
    import socket  # noqa: PLC0415

    from urllib3.exceptions import ConnectTimeoutError  # noqa: PLC0415

    for inner in _chain(exc):  # urllib3's NewConnectionError is a ConnectTimeoutError too: only a real timeout
        if type(inner) is ConnectTimeoutError or isinstance(inner, socket.timeout) or getattr(
                inner, "errno", None) == errno.ETIMEDOUT:
            return (f"{where} did not accept the connection in time (connect_timeout); is the host right, and "
                    "does a firewall let the connection through?")
    return ""


def _os_reason(exc: BaseException, where: str) -> str:
    """The operating system's words for the first OS error in ``exc``'s chain that has them, or ""."""
    for inner in _chain(exc):
        if isinstance(inner, OSError) and inner.strerror:
            return f"{inner.strerror} ({where})"
    return ""


def _tls_reason(exc: BaseException) -> str:
    """The TLS failure itself (``certificate verify failed: ...``), without urllib3's wrapping."""
    import ssl  # noqa: PLC0415

    for inner in _chain(exc):
        if isinstance(inner, ssl.SSLCertVerificationError):
            detail = inner.verify_message or inner.reason or "certificate verify failed"
            return (f"the server's certificate was not accepted ({detail}); pass verify= a CA bundle that "
                    "signs it (or fix the certificate)")
        if isinstance(inner, ssl.SSLError):
            return str(inner.reason or inner)
    return _reason(exc)


def _lost_reason(exc: BaseException) -> str:
    """Why an open connection failed, without urllib3's pool and connection reprs."""
    for inner in _chain(exc):
        said = _broke(inner)
        if said:
            return said
    for inner in _chain(exc):
        if isinstance(inner, OSError) and inner.strerror:
            return inner.strerror
    first = exc.args[0] if exc.args else None
    if len(exc.args) > 1 and isinstance(first, str):  # urllib3's ("Connection broken: ...", inner): no tuple repr
        return _reason(ValueError(first))
    return _reason(exc)


def _broke(inner: BaseException) -> str:
    """How the server ended the connection, if ``inner`` (one error of a chain) says ("" if not)."""
    import http.client  # noqa: PLC0415

    if isinstance(inner, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(inner, ConnectionResetError):
        return "the server reset the connection"
    if isinstance(inner, BrokenPipeError):
        return "the server closed the connection while the request was sent"
    if isinstance(inner, http.client.IncompleteRead) or type(inner).__name__ == "InvalidChunkLength":
        read, more = getattr(inner, "partial", None), getattr(inner, "expected", None)
        read = len(read) if isinstance(read, bytes) else read
        counts = f" ({read} bytes read, {more} more expected)" if isinstance(read, int) and \
            isinstance(more, int) else ""
        return f"the server closed the connection in the middle of its response{counts}"
    return ""


def _reason(exc: BaseException) -> str:
    # urllib3 quotes the request's path with its query ("... with url: /mcp?key=..."): a query may
    # hold a secret, and this text ends up in logs, statuses and the CLI, so it is cut out. The text
    # is cut to 4 KiB first: the path may be a server's (a redirect's), and the pattern tries each
    # "http://" in it against the rest (a 64 KiB path of them took 16 s); only 300 characters are kept.
    text = _QUERY.sub(r"\1?...", str(exc)[:4096])
    return text if len(text) <= 300 else text[:300] + "..."


_QUERY = re.compile(r"((?:https?://|\burl: )[^\s?'\"]*)\?[^\s'\")]+")


def answers(message: Any, request_id: Any) -> bool:
    """Whether ``message`` (or a batch) holds the response to ``request_id``."""
    if isinstance(message, dict):
        return message.get("id") == request_id and type(message.get("id")) is type(request_id) and (
            "result" in message or "error" in message)
    if isinstance(message, list):
        return any(answers(item, request_id) for item in message)
    return False
