"""BearerAuth: the ``requests`` auth machinery under :class:`~mcpsync.OAuth` and :class:`~mcpsync.ClientCredentials`.

As a ``requests.auth.AuthBase`` it is called for every request: on the MCP
server's origin (scheme, host and port) it adds ``Authorization: Bearer`` and
a response hook; on any other origin it does nothing, so the token goes
nowhere else. The hook, like requests' own ``HTTPDigestAuth``, answers a
``401`` (the token is missing, expired or revoked: refresh it, else
authorize anew) or a ``403 insufficient_scope`` (step-up: authorize with the
union of the scopes asked before and the challenged ones, at most
``max_step_ups`` times per request) and re-sends the request once on the same
connection adapter with the new token. Streaming responses work: the re-sent
request keeps the original ``stream``, ``timeout``, ``verify`` and proxies.

Threads: requests run on any thread (mcpsync's HTTP pool threads, or yours).
Token reads are lock-free; renewals, discovery and logins run under one lock,
so concurrent requests that all get a 401 start one login, and the others
re-send with its token. A login started inside a request of mcpsync's
transports ends early when that request is abandoned (timeout, cancel, close).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from typing import Any, Dict, Iterable, Mapping, Optional, Sequence, Tuple

import requests
import requests.auth

from ..exceptions import AuthError, MCPSyncError
from ..transports._http_session import current_exchange
from ._challenge import Challenge
from ._discovery import Discovery, discover
from ._fetch import Fetcher
from ._grants import Signer, TokenEndpoint
from ._registration import ClientIdentity
from . import _tokens
from ._tokens import Token, TokenStore, client_key, server_key, tokens_key
from ._urls import canonical_resource, same_origin

__all__ = ["BearerAuth", "Grant"]

log = logging.getLogger("mcpsync.auth")

_ERROR_BODY_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Grant:
    """A token and everything needed to use and renew it (the unit that is stored)."""

    issuer: str
    resource: str
    token_endpoint: str
    client: ClientIdentity
    token: Token
    scopes: Optional[Tuple[str, ...]] = None  # what was asked for (the base of a step-up)

    def header(self) -> str:
        return f"Bearer {self.token.access_token}"

    def to_dict(self) -> Dict[str, Any]:
        return {"issuer": self.issuer, "resource": self.resource, "token_endpoint": self.token_endpoint,
                "client": self.client.to_dict(), "token": self.token.to_dict(),
                "scopes": list(self.scopes) if self.scopes is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Optional["Grant"]:
        client = ClientIdentity.from_dict(data.get("client") or {})
        token = Token.from_dict(data.get("token") or {})
        issuer, resource, endpoint = data.get("issuer"), data.get("resource"), data.get("token_endpoint")
        if client is None or token is None or not all(isinstance(v, str) for v in (issuer, resource, endpoint)):
            return None
        scopes = data.get("scopes")
        return cls(str(issuer), str(resource), str(endpoint), client, token,
                   tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else None)


def _union(*groups: Optional[Iterable[str]]) -> Tuple[str, ...]:
    seen: Dict[str, None] = {}
    for group in groups:
        for scope in group or ():
            seen.setdefault(scope, None)
    return tuple(seen)


class BearerAuth(requests.auth.AuthBase):
    """Base of the OAuth auth objects; see the module docstring. Subclasses implement :meth:`_obtain`."""

    def __init__(self, server_url: Optional[str], *, store: TokenStore, scopes: Optional[Sequence[str]],
                 verify: Any, http_timeout: float, max_step_ups: int) -> None:
        self.server_url: Optional[str] = None
        self._probe_url: Optional[str] = None
        self.store = store
        self.scopes = tuple(scopes) if scopes else None
        self.verify = verify
        self.http_timeout = http_timeout
        self.max_step_ups = max_step_ups
        self._lock = threading.RLock()
        self._grant: Optional[Grant] = None
        self._loaded = False
        self._discovery: Optional[Discovery] = None
        if server_url is not None:
            self._bind(server_url)

    def __repr__(self) -> str:
        grant = self._grant
        if grant is None:
            state = "no token"
        elif grant.token.expired(_tokens.clock()):
            state = "token expired"
        else:
            state = "token [redacted]"
        issuer = f" issuer={grant.issuer!r}" if grant is not None else ""
        return f"<{type(self).__name__} {self.server_url!r}{issuer} {state}>"

    # -- requests' side (any thread) ---------------------------------------------------------

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        url = r.url or ""
        server = self.server_url or self._bind(url)
        if not same_origin(url, server):
            return r  # another origin never sees the token
        grant = self._grant_for_request()
        if grant is not None:
            r.headers["Authorization"] = grant.header()
        r.register_hook("response", self._on_response)  # type: ignore[no-untyped-call]  # untyped in the stubs
        return r

    def _on_response(self, response: requests.Response, **kwargs: Any) -> requests.Response:
        """The response hook: recover from 401 and 403 insufficient_scope, then re-send."""
        if response.status_code not in (401, 403):
            return response
        if not same_origin(response.url or "", self.server_url or ""):
            return response  # a redirect carried the hook to another origin: that origin gets no token
        if response.request.method == "DELETE":
            return response  # ending a session never starts a login; the session ends anyway
        step_ups = 0
        retried = False
        while True:
            status = response.status_code
            challenge = Challenge.from_header(response.headers.get("WWW-Authenticate"))
            if status == 401 and not retried:
                retried = True
            elif status == 403 and challenge.error == "insufficient_scope":
                if step_ups >= self.max_step_ups:
                    _discard(response)
                    asked = " ".join(self._grant.scopes or ()) if self._grant is not None else ""
                    raise AuthError(f"The MCP server still refuses with 403 insufficient_scope after {step_ups} "
                                    f"authorization attempt(s) (scopes asked: {asked or 'none'}); giving up",
                                    error="insufficient_scope")
                step_ups += 1
            else:
                return response
            sent = _sent_token(response.request)
            try:
                header = self._recover(status, challenge, sent, _abort_signal())
            except BaseException:
                _discard(response)
                raise
            response = _resend(response, header, kwargs)

    # -- renewal and recovery (under the lock) ---------------------------------------------------

    def _grant_for_request(self) -> Optional[Grant]:
        """The grant to send, renewed first (without a person) when it is about to expire."""
        grant = self._grant
        if grant is not None and not grant.token.expiring(_tokens.clock()):
            return grant
        if grant is None and self._loaded:
            return None
        with self._lock:
            if not self._loaded:
                self._load_last()
            grant = self._grant
            if grant is None or not grant.token.expiring(_tokens.clock()):
                return grant
            try:
                with self._fetcher() as fetch:
                    renewed = self._renew(fetch, grant)
            except MCPSyncError as exc:
                log.warning("Could not renew the access token before it expires: %s", exc)
                renewed = None
            if renewed is not None:
                self._keep(renewed)
                return renewed
            return None if grant.token.expired(_tokens.clock()) else grant

    def _recover(self, status: int, challenge: Challenge, sent: Optional[str],
                 abort: Optional[threading.Event]) -> str:
        """After a 401 or 403 for a request that carried ``sent``: the Authorization header to re-send with.

        Raises:
            AuthError: discovery, registration or authorization failed.
            ConnectError, TransportError, RequestTimeout: talking to a server failed.
        """
        with self._lock:
            current = self._grant
            now = _tokens.clock()
            if current is not None and current.token.access_token != sent and not current.token.expired(now):
                wanted = set(challenge.scopes or ())
                if status == 401 or wanted <= set(current.scopes or ()):
                    return current.header()  # another thread renewed it while this request was out
            if abort is not None and abort.is_set():  # it waited for the lock while its request was given up
                raise AuthError("The authorization was abandoned: the request that needed it has ended",
                                error="login_abandoned")
            with self._fetcher() as fetch:
                discovery = self._discover(fetch, challenge)
                if status == 401:
                    grant = self._after_401(fetch, discovery, challenge, sent, abort)
                else:
                    scopes = _union(current.scopes if current is not None else None,
                                    challenge.scopes or discovery.resource_scopes, self.scopes)
                    log.info("The MCP server needs more scopes; authorizing again with %s", " ".join(scopes))
                    grant = self._obtain(fetch, discovery, scopes or None, abort)
            self._keep(grant)
            return grant.header()

    def _after_401(self, fetch: Fetcher, discovery: Discovery, challenge: Challenge, sent: Optional[str],
                   abort: Optional[threading.Event]) -> Grant:
        """A stored token not yet tried, else a refreshed one, else a new authorization."""
        issuer = discovery.server.issuer
        candidate = self._grant
        if candidate is None or candidate.issuer != issuer or candidate.resource != discovery.resource:
            candidate = self._load_grant(issuer, discovery.resource)
            if candidate is not None and candidate.token.access_token != sent \
                    and not candidate.token.expiring(_tokens.clock()):
                return candidate
        if candidate is not None and candidate.token.refresh_token:
            refreshed = self._refresh(fetch, candidate)
            if refreshed is not None:
                return refreshed
        scopes = _union(challenge.scopes or discovery.resource_scopes, self.scopes)
        return self._obtain(fetch, discovery, scopes or None, abort)

    def _refresh(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        """The grant with a refreshed token, or None when the server refused (its refresh token is then dropped)."""
        try:
            token = self._endpoint(grant).refresh(fetch, grant.token, grant.resource)
        except AuthError as exc:
            log.info("Refreshing the access token failed (%s); a new authorization is needed", exc.error)
            spent = replace(grant, token=replace(grant.token, refresh_token=None))  # never try it again
            if self._grant == grant:
                self._grant = spent
            self._store_call("save", tokens_key(grant.issuer, grant.resource), spent.to_dict())
            return None
        log.info("Access token refreshed (issuer %s)", grant.issuer)
        return replace(grant, token=token)

    def _renew(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        """Renew without a person: refresh. (ClientCredentials also runs its grant again.)"""
        return self._refresh(fetch, grant) if grant.token.refresh_token else None

    def _discover(self, fetch: Fetcher, challenge: Challenge) -> Discovery:
        cached = self._discovery
        if cached is not None and challenge.resource_metadata in (None, cached.metadata_url):
            return cached
        assert self.server_url is not None
        self._discovery = discover(fetch, self.server_url, challenge)
        return self._discovery

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        """Subclass: get a new token from the authorization server (the grant type's own flow)."""
        raise NotImplementedError

    def _signer(self) -> Optional[Signer]:
        """Subclass: the private_key_jwt signer, if the client uses one."""
        return None

    def _endpoint(self, grant: Grant) -> TokenEndpoint:
        return TokenEndpoint(grant.token_endpoint, grant.issuer, grant.client, self._signer())

    def _fetcher(self) -> Fetcher:
        return Fetcher(verify=self.verify, timeout=self.http_timeout)

    # -- binding, probing -------------------------------------------------------------------------

    def _bind(self, url: str) -> str:
        with self._lock:
            if self.server_url is None:
                self.server_url = canonical_resource(url)
                self._probe_url = url
            elif canonical_resource(url) != self.server_url:
                raise ValueError(f"This {type(self).__name__} is for {self.server_url}, not {canonical_resource(url)}: "
                                 "use one auth object per MCP server")
            return self.server_url

    def _ensure(self, server_url: Optional[str], *, force: bool, challenged_only: bool) -> None:
        """Make sure a usable token is held for the server (probing it for its challenge first)."""
        if server_url is not None:
            self._bind(server_url)
        if self.server_url is None or self._probe_url is None:
            raise ValueError("No MCP server URL: pass it here or when making the auth object")
        with self._lock:
            if not force and self._grant_for_request() is not None:
                return
            with self._fetcher() as fetch:
                status, header = fetch.probe(self._probe_url)
                if status != 401 and challenged_only:
                    log.debug("%s answered %d without credentials; no login now", self.server_url, status)
                    return
                challenge = Challenge.from_header(header) if status == 401 else Challenge()
                discovery = self._discover(fetch, challenge)
                if force:
                    grant = self._obtain(fetch, discovery, _union(challenge.scopes or discovery.resource_scopes,
                                                                  self.scopes) or None, None)
                else:
                    grant = self._after_401(fetch, discovery, challenge, None, None)
            self._keep(grant)

    def prepare(self, url: str) -> None:
        """For mcpsync's HTTP transports, called when they open, on the opening thread. Blocking.

        Binds this auth object to ``url`` and makes sure a token is at hand
        when the server wants one, so that a login (which may wait minutes for
        a person) happens here rather than inside a request that has a
        timeout. A server that answers a plain GET without 401 is left alone.
        Raises like :meth:`login`.
        """
        self._ensure(url, force=False, challenged_only=True)

    def logout(self) -> None:
        """Forget the tokens for this server, in memory and in the store (the registered client stays)."""
        with self._lock:
            keys = []
            if self.server_url is not None:
                index = self._store_call("load", server_key(self.server_url))
                if isinstance(index, dict) and isinstance(index.get("issuer"), str) \
                        and isinstance(index.get("resource"), str):
                    keys.append(tokens_key(index["issuer"], index["resource"]))
                keys.append(server_key(self.server_url))
            if self._grant is not None:
                keys.append(tokens_key(self._grant.issuer, self._grant.resource))
            self._grant = None
            self._loaded = True
            for key in dict.fromkeys(keys):
                self._store_call("delete", key)

    # -- the store ---------------------------------------------------------------------------------

    def _load_last(self) -> None:
        """Load the tokens this server URL used last, once (no discovery needed)."""
        self._loaded = True
        if self.server_url is None:
            return
        index = self._store_call("load", server_key(self.server_url))
        if isinstance(index, dict) and isinstance(index.get("issuer"), str) and isinstance(index.get("resource"), str):
            self._grant = self._load_grant(index["issuer"], index["resource"])

    def _load_grant(self, issuer: str, resource: str) -> Optional[Grant]:
        data = self._store_call("load", tokens_key(issuer, resource))
        grant = Grant.from_dict(data) if isinstance(data, dict) else None
        if grant is None or grant.issuer != issuer:
            return None
        client = self._accept_client(grant.client)
        return replace(grant, client=client) if client is not None else None

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        """Subclass: the stored client if it is still who we are (with our secret), else None."""
        return client

    def _keep(self, grant: Grant) -> None:
        """Make ``grant`` the current one and store it."""
        self._grant = grant
        self._loaded = True
        self._store_call("save", tokens_key(grant.issuer, grant.resource), grant.to_dict())
        if self.server_url is not None:
            self._store_call("save", server_key(self.server_url), {"issuer": grant.issuer, "resource": grant.resource})
        if grant.client.source == "dcr":
            self._store_call("save", client_key(grant.issuer), grant.client.to_dict())

    def _store_call(self, method: str, *args: Any) -> Any:
        """A store method; a failing store is logged, never fatal (tokens stay in memory)."""
        try:
            return getattr(self.store, method)(*args)
        except Exception as exc:
            log.warning("Token store %s failed: %s", method, exc)
            return None


def _sent_token(request: requests.PreparedRequest) -> Optional[str]:
    value = request.headers.get("Authorization") if request is not None else None
    if isinstance(value, str) and value[:7].lower() == "bearer ":
        return value[7:]
    return None


def _discard(response: requests.Response) -> None:
    """Read a small error body (so the connection can be reused) and close the response."""
    try:
        response.raw.read(_ERROR_BODY_LIMIT)
    except Exception:  # the body is not needed; a broken one only costs the connection
        pass
    response.close()


def _resend(response: requests.Response, header: str, kwargs: Mapping[str, Any]) -> requests.Response:
    """Send ``response``'s request again with ``header``, as requests' digest auth does."""
    _discard(response)
    prepared = response.request.copy()
    prepared.headers["Authorization"] = header
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
