"""The requests side of :class:`~mcpsync.auth._bearer.BearerAuth` (any thread): the ``requests`` auth
call that adds the token on the MCP server's origin, and the response hook that answers a ``401``
or a ``403 insufficient_scope`` and sends the request again (see ``_bearer``'s docstring).

The hook only decides and re-sends; getting a grant (renewal, discovery, login, under the lock)
is the renewal side's, which :class:`RequestHook` names as the methods a subclass provides.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Dict, Mapping, Optional

import requests
import requests.auth

from ..exceptions import AuthError
from ..transports._http_session import current_exchange
from ._challenge import Challenge
from ._dpop import Binding, Nonces
from ._grant import Grant, held_scopes
from ._urls import same_origin

__all__ = ["RequestHook"]

log = logging.getLogger("mcpsync.auth")

_ERROR_BODY_LIMIT = 64 * 1024


class RequestHook(requests.auth.AuthBase):
    """Mixin: the token on the server's origin, and the answers to 401 and 403 insufficient_scope.

    The renewal side (:class:`~mcpsync.auth._bearer.BearerAuth`) sets the attributes below and
    provides :meth:`_bind`, :meth:`_grant_for_request` and :meth:`_recover`.
    """

    server_url: Optional[str]
    dpop: bool
    max_authorizations: int
    _grant: Optional[Grant]
    _nonces: Nonces

    def _bind(self, url: str) -> str:
        """Renewal side: bind to the MCP server of ``url``; its canonical URL."""
        raise NotImplementedError

    def _grant_for_request(self) -> Optional[Grant]:
        """Renewal side: the grant to send now (renewed first when about to expire), or None."""
        raise NotImplementedError

    def _recover(self, status: int, challenge: Challenge, sent: Optional[str],
                 abort: Optional[threading.Event]) -> Grant:
        """Renewal side: after a 401 or 403 for a request that carried ``sent``, the grant to re-send with."""
        raise NotImplementedError

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        url = r.url or ""
        server = self.server_url or self._bind(url)
        if not same_origin(url, server):
            return r  # another origin never sees the token
        grant = self._grant_for_request()
        if grant is not None:
            r.headers.update(self._headers(grant, r))
        r.register_hook("response", self._on_response)  # type: ignore[no-untyped-call]  # untyped in the stubs
        return r

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: recover from 401 and 403 insufficient_scope, then re-send."""
        self._note_nonce(response)
        if not self._answerable(response):
            return response
        # Authorizations this request has seen: the one behind the token it carried counts as the first.
        attempts = 1 if _sent_token(response.request) is not None else 0
        retried = nonce_retried = False
        while True:
            status = response.status_code
            challenge = Challenge.from_header(response.headers.get("WWW-Authenticate"))
            sent = _sent_token(response.request)
            same = None if nonce_retried else self._nonce_grant(response, challenge)
            if same is not None:
                # RFC 9449 §9: the resource server wants its nonce in the proof; the token is fine.
                nonce_retried = True
                log.debug("The MCP server asks for a DPoP nonce; sending the request again with it")
                response = self._send_again(response, same, kwargs)
                continue
            if not self._may_recover(response, challenge, sent, attempts, retried):
                return response
            retried = retried or status == 401
            grant = self._recover_for(response, status, challenge, sent)
            # A step-up is one more authorization; a 401's new token only replaces a dead one.
            attempts = attempts + 1 if status == 403 else max(attempts, 1)
            response = self._send_again(response, grant, kwargs)

    def _may_recover(self, response: requests.Response, challenge: Challenge, sent: Optional[str], attempts: int,
                     retried: bool) -> bool:
        """Whether to recover and re-send: a 401 once per request, a 403 insufficient_scope by a step-up
        (raising, ``response`` closed, when a step-up cannot or may not help); anything else is the answer."""
        if response.status_code == 401:
            return not retried
        if response.status_code != 403 or challenge.error != "insufficient_scope":
            return False
        self._check_step_up(response, challenge, sent, attempts)
        return True

    def _answerable(self, response: requests.Response) -> bool:
        """Whether the hook answers ``response``: a 401 or 403 from the MCP server's origin, not to a DELETE."""
        if response.status_code not in (401, 403):
            return False
        if not same_origin(response.url or "", self.server_url or ""):
            return False  # a redirect carried the hook to another origin: that origin gets no token
        return response.request.method != "DELETE"  # ending a session never starts a login; it ends anyway

    def _nonce_grant(self, response: requests.Response, challenge: Challenge) -> Optional[Grant]:
        """The DPoP-bound grant to send again with a new proof when a 401 only asks for the server's nonce."""
        grant = self._grant
        if response.status_code != 401 or challenge.dpop_error != "use_dpop_nonce":
            return None
        if "DPoP" not in response.request.headers or grant is None or not grant.dpop:
            return None
        return grant

    def _note_nonce(self, response: requests.Response) -> None:
        """Keep the DPoP nonce a response hands out, for the next proof to that server."""
        if self.dpop and response.request is not None:
            self._nonces.note(response.request.url or "", response.headers)

    def _send_again(self, response: requests.Response, grant: Grant, kwargs: Mapping[str, Any]) -> requests.Response:
        """Send ``response``'s request again presenting ``grant``, and note the answer's DPoP nonce."""
        fresh = _resend(response, self._headers(grant, response.request), kwargs)
        self._note_nonce(fresh)
        return fresh

    def _recover_for(self, response: requests.Response, status: int, challenge: Challenge,
                     sent: Optional[str]) -> Grant:
        """:meth:`_recover` for the hook: a failure closes ``response`` before it propagates."""
        try:
            return self._recover(status, challenge, sent, _abort_signal())
        except BaseException:
            _discard(response)
            raise

    def _headers(self, grant: Grant, request: requests.PreparedRequest) -> Dict[str, str]:
        """The headers that present ``grant``'s token on ``request``: Authorization, and a fresh DPoP proof."""
        headers = {"Authorization": grant.header()}
        if grant.dpop and grant.dpop_key is not None:
            url = request.url or ""
            binding = Binding(grant.dpop_key, self._nonces)
            headers["DPoP"] = binding.proof(request.method or "GET", url, access_token=grant.token.access_token)
        return headers

    def _check_step_up(self, response: requests.Response, challenge: Challenge, sent: Optional[str],
                       attempts: int) -> None:
        """Raise (closing ``response``) when a step-up for this 403 insufficient_scope cannot or may not help."""
        current = self._grant
        held = held_scopes(current) if current is not None and current.token.access_token == sent else None
        wanted = challenge.scopes
        if held is not None and wanted and set(wanted) <= held:
            _discard(response)
            raise AuthError(f"The MCP server refuses with 403 insufficient_scope, asking for the scopes "
                            f"{' '.join(wanted)!r}, which the token it was sent already holds; authorizing again "
                            "cannot gain anything, so mcpsync does not (the server needs a permission its scopes "
                            "do not express: ask its operator)", error="insufficient_scope")
        if attempts >= self.max_authorizations:
            _discard(response)
            asked = " ".join(current.scopes or ()) if current is not None else ""
            raise AuthError(f"The MCP server still refuses with 403 insufficient_scope after {attempts} "
                            f"authorization(s) for this request (scopes asked: {asked or 'none'}); giving up "
                            f"(max_authorizations={self.max_authorizations})", error="insufficient_scope")


def _sent_token(request: requests.PreparedRequest) -> Optional[str]:
    value = request.headers.get("Authorization") if request is not None else None
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:]
    if isinstance(value, str) and value[:5].lower() == "dpop ":
        return value[5:]
    return None


def _discard(response: requests.Response) -> None:
    """Read a small error body (so the connection can be reused) and close the response."""
    try:
        response.raw.read(_ERROR_BODY_LIMIT)
    except Exception:  # the body is not needed; a broken one only costs the connection
        pass
    response.close()


def _resend(response: requests.Response, headers: Mapping[str, str], kwargs: Mapping[str, Any]) -> requests.Response:
    """Send ``response``'s request again with ``headers`` (Authorization, DPoP), as requests' digest auth does."""
    _discard(response)
    prepared = response.request.copy()
    if "DPoP" not in headers:
        prepared.headers.pop("DPoP", None)  # a proof never outlives the token it was made for
    prepared.headers.update(headers)
    adapter: Any = response.connection
    fresh: requests.Response = adapter.send(prepared, **kwargs)
    fresh.history.append(response)
    fresh.request = prepared
    return fresh


def _abort_signal() -> Optional[threading.Event]:
    """The abort event of the mcpsync HTTP exchange this thread is running, if any.

    mcpsync's HTTP transports record the exchange a pool thread works for
    (``transports._http_session.current_exchange``); its ``aborted`` Event is set when
    the caller stops waiting (timeout, cancel) or the transport closes. Read
    defensively: without it a login simply runs to its own timeout.
    """
    exchange = current_exchange()
    event = getattr(exchange, "aborted", None)
    return event if isinstance(event, threading.Event) else None
