"""One-off JSON-RPC calls over HTTP: no handshake, no session, no threads.

:func:`call_mcp` POSTs one request and returns the raw JSON-RPC envelope the
server answered with, read from a JSON body or from the SSE stream.
:func:`parse_sse` is the small parser it uses for an SSE body held whole.

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
from typing import Any, Dict, Mapping, Optional

from ._rpc import jsonrpc as rpc
from .exceptions import MCPSyncError, ProtocolError, RequestTimeout

__all__ = ["call_mcp", "parse_sse"]

_ids = itertools.count(1)


def parse_sse(text: str) -> Any:
    """The JSON of the first non-empty ``data:`` line of an SSE body; else ``text`` parsed as JSON.

    Raises:
        ProtocolError: no ``data:`` line, and ``text`` is not JSON either.
    """
    for line in text.splitlines():
        if line.startswith("data:"):
            value = line[5:].strip()
            if value:
                return rpc.decode(value)
    return rpc.decode(text)


def call_mcp(url: str, method: str, params: Optional[Mapping[str, Any]] = None, *,
             headers: Optional[Mapping[str, str]] = None, timeout: float = 30.0) -> Dict[str, Any]:
    """POST one JSON-RPC request to ``url`` and return the whole response envelope.

    ::

        reply = mcpsync.call_mcp("http://localhost:8000/mcp", "tools/list")
        tools = reply["result"]["tools"]

    The answer may be a JSON body or an SSE stream (its notifications are
    skipped, the first response is returned). A JSON-RPC error comes back as
    the envelope's ``error`` member: it is not raised.

    Args:
        url: the Streamable HTTP endpoint.
        method: the JSON-RPC method, e.g. ``"tools/list"``.
        params: its params object.
        headers: extra headers (e.g. ``Authorization``, ``MCP-Protocol-Version``).
        timeout: seconds for the whole call: connecting, sending and reading.

    Raises:
        HTTPStatusError: a non-2xx status (with the body and auth hints).
        RequestTimeout: no complete answer within ``timeout``.
        ConnectError: the server could not be reached.
        ProtocolError: the answer is not JSON, or holds no response.
    """
    from .transports._http import READ_CHUNK, iter_chunks, media_type, new_session, read_body, status_error, translate
    from .transports._sse import SSEParser

    deadline = time.monotonic() + timeout
    request_id = next(_ids)
    body = rpc.encode(rpc.make_request(request_id, method, dict(params) if params is not None else None))
    sent_headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    sent_headers.update(headers or {})

    def timed_out() -> RequestTimeout:
        return RequestTimeout(f"Request timeout after {int(timeout * 1000)}ms", method=method, timeout=timeout)

    try:
        with new_session(url=url, pool_size=1) as session:
            with session.post(url, data=body, headers=sent_headers, stream=True,
                              timeout=(min(timeout, 10.0), timeout)) as response:
                if not 200 <= response.status_code < 300:
                    raise status_error(response)
                if media_type(response) != "text/event-stream":
                    data = read_body(response, 64 * 1024 * 1024, f"The response to {method}")
                    if time.monotonic() > deadline:
                        raise timed_out()
                    reply = rpc.decode(data)
                    if not isinstance(reply, dict):
                        raise ProtocolError(f"The response to {method} is not a JSON-RPC object: "
                                            f"{rpc.preview(data)}")
                    return reply
                parser = SSEParser()
                for chunk in iter_chunks(response, READ_CHUNK):
                    for event in parser.feed(chunk):
                        if event.event != "message":
                            continue
                        try:
                            message = rpc.decode(event.data)
                        except ProtocolError as exc:
                            raise ProtocolError(f"Malformed SSE data in the response to {method}: {exc}") from exc
                        if isinstance(message, dict) and ("result" in message or "error" in message):
                            return message
                    if time.monotonic() > deadline:
                        raise timed_out()
                raise ProtocolError(f"No response received for request ID {request_id}")
    except MCPSyncError:
        raise
    except Exception as exc:
        error = translate(exc, url)
        if isinstance(error, RequestTimeout):
            raise timed_out() from exc
        raise error from exc
