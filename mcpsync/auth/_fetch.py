"""HTTP for one authorization flow: metadata GETs, form and JSON POSTs, the probe of the MCP server.

This is the auth package's one boundary for ``requests``/``urllib3``/``OSError``
exceptions: they become mcpsync exceptions here (via the transports'
:func:`~mcpsync.transports._http_io.translate`), chained with ``from``.

Each flow opens a :class:`Fetcher` and closes it when done, so no connection
(and no file descriptor) outlives the flow. Redirects are never followed: a
metadata or token endpoint that redirects is answered as it is, which keeps
every request on the URL that was checked. Bodies are read up to 1 MiB.
The fetcher's session is built with its egress gate (a
:class:`~mcpsync.transports._egress.DiscoveryGate` for a flow: no request from a
remote MCP server's flow to this machine or its network, none to a cloud metadata
address), which checks each request on the URL about to be sent; a refusal is
:class:`~mcpsync.AuthError` ``unsafe_url``, chained from the gate's
:class:`~mcpsync.exceptions.EgressRefused`.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

from ..exceptions import AuthError, EgressRefused, MCPSyncError
from ..transports._egress import AnyOrigin, Gate
from ..transports._http_io import read_body, translate
from ..transports._http_session import new_session
from ..transports._urls import display_url

if TYPE_CHECKING:  # pragma: no cover
    import requests

__all__ = ["Fetcher", "Reply"]

log = logging.getLogger("mcpsync.auth")

BODY_LIMIT = 1024 * 1024

Reply = Tuple[int, Any]
"""(HTTP status, the decoded JSON body or None when the body is not JSON)."""


class Fetcher:
    """A short-lived HTTP client for metadata, registration and token requests.

    Not thread-safe: one flow, one thread. Use it in a ``with`` block.

    Args:
        verify: TLS verification, as for ``requests`` (True, False or a CA bundle path).
        timeout: seconds to connect, and seconds to wait for each read.
        gate: where requests may go (None: any origin the caller checked, never a metadata address).
    """

    def __init__(self, *, verify: Any = True, timeout: float = 30.0, gate: Optional[Gate] = None) -> None:
        self._session: "requests.Session" = new_session(gate=gate or AnyOrigin(), verify=verify, pool_size=2)
        self._timeout = (timeout, timeout)

    def __enter__(self) -> "Fetcher":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close every connection this fetcher opened. Idempotent."""
        self._session.close()

    def get_json(self, url: str, headers: Optional[Mapping[str, str]] = None) -> Reply:
        """GET ``url`` asking for JSON.

        Raises:
            AuthError: (``unsafe_url``) the gate refuses the URL (chained from EgressRefused).
            ConnectError, TransportError, RequestTimeout: the request itself failed.
        """
        return self._send("GET", url, {"Accept": "application/json", **(headers or {})})

    def post_form(self, url: str, form: Mapping[str, str], headers: Optional[Mapping[str, str]] = None) -> Reply:
        """POST ``form`` as ``application/x-www-form-urlencoded`` (token requests). Raises like :meth:`get_json`."""
        return self._send("POST", url, {"Accept": "application/json", **(headers or {})}, data=dict(form))

    def post_form_with_headers(self, url: str, form: Mapping[str, str],
                               headers: Optional[Mapping[str, str]] = None) -> Tuple[int, Any, Mapping[str, str]]:
        """As :meth:`post_form`, with the response's headers too (DPoP nonces). Raises like :meth:`get_json`."""
        return self._exchange("POST", url, {"Accept": "application/json", **(headers or {})}, data=dict(form))

    def post_json(self, url: str, body: Mapping[str, Any]) -> Reply:
        """POST ``body`` as JSON (client registration). Raises like :meth:`get_json`."""
        return self._send("POST", url, {"Accept": "application/json", "Content-Type": "application/json"},
                          data=json.dumps(body).encode("utf-8"))

    def probe(self, url: str) -> Tuple[int, Optional[str]]:
        """GET the MCP endpoint without credentials: (status, its ``WWW-Authenticate``).

        Reads no body: a server that answers with an event stream is hung up on.
        Raises like :meth:`get_json`.
        """
        response = self._request("GET", url, {"Accept": "text/event-stream, application/json"})
        try:
            return response.status_code, response.headers.get("WWW-Authenticate")
        finally:
            response.close()

    def _send(self, method: str, url: str, headers: Dict[str, str], data: Any = None) -> Reply:
        status, document, _ = self._exchange(method, url, headers, data)
        return status, document

    def _exchange(self, method: str, url: str, headers: Dict[str, str],
                  data: Any = None) -> Tuple[int, Any, Mapping[str, str]]:
        response = self._request(method, url, headers, data)
        try:
            body = read_body(response, BODY_LIMIT, f"The answer from {display_url(url)}")
        except MCPSyncError:
            raise
        except Exception as exc:
            raise translate(exc, url) from exc
        finally:
            response.close()
        try:
            document = json.loads(body.decode("utf-8")) if body.strip() else None
        except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser recurses
            document = None
        log.debug("%s %s answered %d", method, display_url(url), response.status_code)
        return response.status_code, document, response.headers  # case-insensitive

    def _request(self, method: str, url: str, headers: Dict[str, str], data: Any = None) -> "requests.Response":
        try:
            return self._session.request(method, url, headers=headers, data=data, stream=True,
                                         allow_redirects=False, timeout=self._timeout)
        except EgressRefused as exc:  # the gate, on the URL about to be sent: nothing was sent
            raise AuthError(str(exc), error="unsafe_url") from exc
        except MCPSyncError:
            raise
        except Exception as exc:
            raise translate(exc, url) from exc
