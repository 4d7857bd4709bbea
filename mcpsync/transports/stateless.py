"""One-off JSON-RPC calls over HTTP: no handshake, no session, no threads.

:func:`call_mcp` POSTs one request and returns the raw JSON-RPC envelope the
server answered with, read from a JSON body or, incrementally, from an SSE
stream (with the same :class:`~mcpsync.transports._sse.SSEParser` the
transports use). :func:`parse_sse` reads an SSE body already held whole, with
that parser too.

When to use it: health checks, scripts and glue code that make one call to a
*stateless* Streamable HTTP server (one that needs no ``initialize`` and no
``Mcp-Session-Id``), or to probe an endpoint. It costs one HTTP exchange and
no background thread.

When not to: for a stateful server (most of them answer a request without a
session with HTTP 400), for server-to-client requests (sampling, elicitation,
roots), progress, cancellation, or many calls in a row. Use :class:`mcpsync.Client`
(``mcpsync.connect(url)``), which does the handshake and keeps the session.
"""

from __future__ import annotations

import itertools
import time
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional

from .._rpc import jsonrpc as rpc
from ..exceptions import MCPSyncError, ProtocolError, RequestTimeout
from ._http_io import DEFAULT_MAX_MESSAGE_SIZE, READ_CHUNK, iter_chunks, media_type, read_body, status_error, translate
from ._egress import OriginGate
from ._http_session import new_session
from ._sse import SSEParser, message_data
from ._urls import display_url

__all__ = ["call_mcp", "parse_sse"]

_ids = itertools.count(1)


def parse_sse(text: str) -> Any:
    """The JSON of the first event with data in an SSE body held whole; else ``text`` parsed as JSON.

    Any event type counts; an event whose data is empty (a priming event) is skipped.
    Pure: no I/O, safe from any thread.

    Raises:
        ProtocolError: the first event's data is not JSON, or there is no event with
            data and ``text`` is not JSON either.
    """
    parser = SSEParser()
    for event in parser.feed(text.encode("utf-8") + b"\n\n"):  # the blank lines end a last, unended event
        return rpc.decode(event.data)
    return rpc.decode(text)


def call_mcp(url: str, method: str, params: Optional[Mapping[str, Any]] = None, *,
             headers: Optional[Mapping[str, str]] = None, timeout: float = 30.0) -> Dict[str, Any]:
    """POST one JSON-RPC request to ``url`` and return the whole response envelope.

    ::

        reply = mcpsync.call_mcp("http://localhost:8000/mcp", "tools/list")
        tools = reply["result"]["tools"]

    The answer may be a JSON body or an SSE stream (its notifications are
    skipped, the first response is returned). A JSON-RPC error comes back as
    the envelope's ``error`` member: it is not raised. Blocks the calling thread
    for at most about ``timeout``; starts no thread; safe to call from many threads.

    Args:
        url: the Streamable HTTP endpoint.
        method: the JSON-RPC method, e.g. ``"tools/list"``.
        params: its params object.
        headers: extra headers (e.g. ``Authorization``, ``MCP-Protocol-Version``).
        timeout: seconds for the whole call: connecting, sending and reading.

    Raises:
        EgressRefused: the request (or a redirect hop) would leave ``url``'s origin; nothing was sent there.
        HTTPStatusError: a non-2xx status (with the body and auth hints).
        RequestTimeout: no complete answer within ``timeout``.
        ConnectError: the server could not be reached.
        ProtocolError: the answer is not JSON, or holds no response.
    """
    deadline = time.monotonic() + timeout
    request_id = next(_ids)
    body = rpc.encode(rpc.make_request(request_id, method, dict(params) if params is not None else None))
    sent_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    sent_headers.update(headers or {})

    def timed_out() -> RequestTimeout:
        return RequestTimeout.after(timeout, method=method, server=display_url(url))

    def until_deadline(chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            yield chunk
            if time.monotonic() > deadline:  # checked per chunk: keep-alive comments alone never end it
                raise timed_out()

    try:
        with new_session(gate=OriginGate(url), url=url, pool_size=1) as session:
            with session.post(url, data=body, headers=sent_headers, stream=True,
                              timeout=(min(timeout, 10.0), timeout)) as response:
                if not 200 <= response.status_code < 300:
                    raise status_error(response)
                if media_type(response) != "text/event-stream":
                    data = read_body(response, DEFAULT_MAX_MESSAGE_SIZE, f"The response to {method}")
                    if time.monotonic() > deadline:
                        raise timed_out()
                    reply = rpc.decode(data)
                    if not isinstance(reply, dict):
                        raise ProtocolError(f"The response to {method} is not a JSON-RPC object: "
                                            f"{rpc.preview(data)}")
                    return reply
                for text in message_data(until_deadline(iter_chunks(response, READ_CHUNK)), SSEParser()):
                    try:
                        message = rpc.decode(text)
                    except ProtocolError as exc:
                        raise ProtocolError(f"Malformed SSE data in the response to {method}: {exc}") from exc
                    if isinstance(message, dict) and ("result" in message or "error" in message):
                        return message
                raise ProtocolError(f"No response received for request ID {request_id}")
    except MCPSyncError:
        raise
    except Exception as exc:
        error = translate(exc, url)
        if isinstance(error, RequestTimeout):
            raise timed_out() from exc
        raise error from exc
