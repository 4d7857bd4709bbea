"""BearerAuth: the ``requests`` auth machinery under :class:`~mcpsync.OAuth` and :class:`~mcpsync.ClientCredentials`.

As a ``requests.auth.AuthBase`` it is called for every request: on the MCP
server's origin (scheme, host and port) it adds ``Authorization: Bearer`` and
a response hook; on any other origin it does nothing, so the token goes
nowhere else. The hook, like requests' own ``HTTPDigestAuth``, answers a
``401`` (the token is missing, expired or revoked: refresh it, else
authorize anew) or a ``403 insufficient_scope`` (step-up: authorize with the
union of the scopes asked before and the challenged ones) and re-sends the
request once on the same connection adapter with the new token. A request
sees at most ``max_authorizations`` authorizations in all, counting the one
that got the token it was first sent with; a ``403 insufficient_scope`` that
asks only for scopes the token already holds is not answered with a new
authorization (it could gain nothing): the hook raises
:class:`~mcpsync.AuthError` (``insufficient_scope``) at once. Streaming responses work: the re-sent
request keeps the original ``stream``, ``timeout``, ``verify`` and proxies.

Threads: requests run on any thread (mcpsync's HTTP pool threads, or yours).
Token reads are lock-free; renewals, discovery and logins run under one lock,
so concurrent requests that all get a 401 start one login, and the others
re-send with its token. A login started inside a request of mcpsync's
transports ends early when that request is abandoned (timeout, cancel, close).

The class is the token renewal (grants refreshed, recovered, obtained); its bases are the
requests side (:class:`~mcpsync.auth._hook.RequestHook`: the auth call and the response hook)
and the grants' persistence (:class:`~mcpsync.auth._stored.StoredGrants`: loaded, kept, forgotten).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any, Optional, Sequence, Tuple


from .. import _fork
from ..exceptions import AuthError, MCPSyncError
from ..transports import _egress
from ._binding import IssuerBinding
from ._challenge import Challenge
from ._discovery import AuthServer, Discovery, discover
from . import _dpop
from ._dpop import Binding, DPoPKey, DPoPSetting, Nonces
from ._fetch import Fetcher
from ._pickling import ProcessLocal
from ._grants import Signer, TokenEndpoint
from ._hook import RequestHook
from ._stored import StoredGrants
from ._registration import ClientIdentity
from . import _tokens
from ._grant import Grant, max_authorizations_from, union
from ._tokens import TokenStore, tokens_key
from ._urls import canonical_resource

__all__ = ["BearerAuth", "Grant"]

log = logging.getLogger("mcpsync.auth")

class BearerAuth(ProcessLocal, StoredGrants, RequestHook):
    """Base of the OAuth auth objects; see the module docstring. Subclasses implement :meth:`_obtain`.

    Pickles as its settings, never its tokens (see ``_pickling``); new locks after fork.
    """

    _process_only = frozenset({"_lock", "_nonces", "_grant", "_persisted", "_loaded", "_discovery", "_dpop_key",
                               "_issuer_rule"})

    def __init__(self, server_url: Optional[str], *, store: TokenStore, scopes: Optional[Sequence[str]],
                 verify: Any, http_timeout: float, max_authorizations: int, max_step_ups: Optional[int] = None,
                 dpop: DPoPSetting = False, issuer: Optional[str] = None) -> None:
        max_authorizations = max_authorizations_from(max_authorizations, max_step_ups)
        if max_authorizations < 1:
            raise ValueError("max_authorizations must be at least 1 (the first authorization counts)")
        IssuerBinding(issuer, None, "")  # a pinned issuer must be a safe URL (ValueError)
        self.issuer = issuer
        if dpop is not False and dpop is not None:
            _dpop.require()
        # A key the user supplied is a setting (pickled with the others); one made on first need is not.
        self._dpop_own_key: Optional[DPoPKey] = _dpop.supplied_key(dpop)
        self._dpop_supplied = self._dpop_own_key is not None
        self.dpop = dpop is True or self._dpop_supplied
        self._fresh_process_state()
        _fork.watch(self, "_after_fork_in_child")
        self.server_url: Optional[str] = None
        self._probe_url: Optional[str] = None
        self.store = store
        self.scopes = tuple(scopes) if scopes else None
        self.verify = verify
        self.http_timeout = http_timeout
        self.max_authorizations = max_authorizations
        if server_url is not None:
            self._bind(server_url)

    def _fresh_process_state(self) -> None:
        self._after_fork_in_child()
        self._issuer_rule: Optional[IssuerBinding] = None  # made on first use: subclasses set their secrets first
        # made on first need (or the one stored with the tokens), unless the user supplied one
        self._dpop_key: Optional[DPoPKey] = self._dpop_own_key
        self._grant: Optional[Grant] = None
        self._persisted: Optional[Grant] = None  # the grant known to be the stored one (read or written as it is)
        self._loaded = False
        self._discovery: Optional[Discovery] = None

    def _after_fork_in_child(self) -> None:
        self._lock = threading.RLock()
        self._nonces = Nonces()

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
            renewed = self._renew_quietly(grant)
            if renewed is not None:
                self._keep(renewed)
                return renewed
            return None if grant.token.expired(_tokens.clock()) else grant

    def _renew_quietly(self, grant: Grant) -> Optional[Grant]:
        """:meth:`_renew` before expiry, where a failure is only logged (the token may still be used)."""
        try:
            with self._fetcher() as fetch:
                return self._renew(fetch, grant)
        except MCPSyncError as exc:
            log.warning("Could not renew the access token before it expires: %s", exc)
            return None

    def _recover(self, status: int, challenge: Challenge, sent: Optional[str],
                 abort: Optional[threading.Event]) -> Grant:
        """After a 401 or 403 for a request that carried ``sent``: the grant to re-send with.

        Raises:
            AuthError: discovery, registration or authorization failed.
            ConnectError, TransportError, RequestTimeout: talking to a server failed.
        """
        with self._lock:
            current = self._grant
            renewed = self._renewed_meanwhile(status, challenge, sent)
            if renewed is not None:
                return renewed  # another thread renewed it while this request was out
            if abort is not None and abort.is_set():  # it waited for the lock while its request was given up
                raise AuthError("The authorization was abandoned: the request that needed it has ended",
                                error="login_abandoned")
            with self._fetcher() as fetch:
                # A token refused with 401 may be from an authorization server the resource no longer
                # trusts (SEP-2352): read its metadata again rather than trust what was cached.
                discovery = self._discover(fetch, challenge, fresh=status == 401 and sent is not None)
                if status == 401:
                    grant = self._after_401(fetch, discovery, challenge, sent, abort)
                else:
                    grant = self._step_up(fetch, discovery, challenge, current, abort)
            self._keep(grant)
            return grant

    def _renewed_meanwhile(self, status: int, challenge: Challenge, sent: Optional[str]) -> Optional[Grant]:
        """The current grant, when it is not the refused one, is alive, and (for a 403) holds the scopes asked."""
        current = self._grant
        if current is None or current.token.access_token == sent or current.token.expired(_tokens.clock()):
            return None
        if status == 401 or set(challenge.scopes or ()) <= set(current.scopes or ()):
            return current
        return None

    def _step_up(self, fetch: Fetcher, discovery: Discovery, challenge: Challenge, current: Optional[Grant],
                 abort: Optional[threading.Event]) -> Grant:
        """A new authorization for the union of the scopes held, challenged (else the resource's) and configured."""
        scopes = union(current.scopes if current is not None else None,
                       challenge.scopes or discovery.resource_scopes, self.scopes)
        log.info("The MCP server needs more scopes; authorizing again with %s", " ".join(scopes))
        return self._obtain(fetch, discovery, scopes or None, abort)

    def _after_401(self, fetch: Fetcher, discovery: Discovery, challenge: Challenge, sent: Optional[str],
                   abort: Optional[threading.Event]) -> Grant:
        """A stored token not yet tried, else a refreshed one, else a new authorization."""
        candidate = self._grant
        if not _for(candidate, discovery):
            candidate = self._load_grant(discovery.server.issuer, discovery.resource)
            untried = _untried(candidate, sent)
            if untried is not None:
                return untried
        if candidate is not None and candidate.token.refresh_token:
            refreshed = self._refresh(fetch, candidate)
            if refreshed is not None:
                return refreshed
        scopes = union(challenge.scopes or discovery.resource_scopes, self.scopes)
        return self._obtain(fetch, discovery, scopes or None, abort)

    def _refresh(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        """The grant with a refreshed token, or None when its refresh token is dead (``invalid_grant``).

        Runs inside the store's transaction for the grant's entry (for a
        :class:`FileTokenStore`, its file lock), so that processes sharing the
        store refresh one at a time: the stored grant is read again first, and
        one that another process stored since is used instead (as it is when
        still fresh, else its refresh token is the one spent). The answer is
        written back only over the entry that was read (compare-and-swap).
        Only ``invalid_grant`` forgets a refresh token.

        Raises:
            AuthError: (``refresh_unavailable``) the token endpoint failed otherwise
                (a 5xx, a 429, another OAuth error): the stored grant is kept as it was.
            ConnectError, TransportError, RequestTimeout: the token endpoint could not be
                reached (the stored grant is kept too).
        """
        key = tokens_key(grant.issuer, grant.resource)
        with self._transaction(key):
            stored = self._store_call("load", key)
            newer = self._parse_grant(stored, grant.issuer, grant.resource)
            if newer is not None and newer.token != grant.token:
                if not newer.token.expiring(_tokens.clock()):
                    log.info("Using the tokens stored by another process or auth object (issuer %s)", grant.issuer)
                    return self._adopt(grant, newer)
                if newer.token.refresh_token:
                    log.debug("Refreshing with the newer refresh token found in the store")
                    grant = self._adopt(grant, newer)
            try:
                token = self._endpoint(grant).refresh(fetch, grant.token, grant.resource)
            except AuthError as exc:
                if exc.error != "invalid_grant":
                    raise AuthError(f"{exc}. The stored refresh token was kept (only an invalid_grant answer makes "
                                    "mcpsync forget it): this looks temporary, so try again later; no new login "
                                    "was started", error="refresh_unavailable") from exc
                log.info("Refreshing the access token failed (invalid_grant: the refresh token is dead); a new "
                         "authorization is needed")
                spent = replace(grant, token=replace(grant.token, refresh_token=None))  # never try it again
                if self._grant == grant:
                    self._grant = spent
                if stored is not None:
                    self._store_call("replace", key, stored, spent.to_dict())
                return None
            log.info("Access token refreshed (issuer %s)", grant.issuer)
            fresh = replace(grant, token=token)
            if self._store_call("replace", key, stored, fresh.to_dict()):
                self._persisted = fresh
            else:
                log.warning("The stored tokens for %s changed while they were refreshed; leaving them as they are "
                            "(the new token is used by this process only)", grant.resource)
            return fresh

    def _renew(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        """Renew without a person: refresh. (ClientCredentials also runs its grant again.)"""
        return self._refresh(fetch, grant) if grant.token.refresh_token else None

    def _discover(self, fetch: Fetcher, challenge: Challenge, *, fresh: bool = False) -> Discovery:
        """The discovery for ``challenge``: the cached one for the same metadata URL unless ``fresh``.

        A fresh read that names another issuer means the authorization server
        has changed: the callers then look up (or get) a client and tokens
        under the new issuer, so nothing of the old server's is sent to it.
        """
        cached = self._discovery
        if not fresh and cached is not None and challenge.resource_metadata in (None, cached.metadata_url):
            return cached
        assert self.server_url is not None
        discovery = discover(fetch, self.server_url, challenge, prefer=self.issuer)
        previous = cached.server.issuer if cached is not None else None
        self._rule().check(discovery.server.issuer, self.server_url, self._load, self._save, previous)
        if cached is not None and discovery.server.issuer != cached.server.issuer:
            log.warning("The authorization server of %s changed from %s to %s; authorizing with the new one",
                        self.server_url, cached.server.issuer, discovery.server.issuer)
        self._discovery = discovery
        return discovery

    def _rule(self) -> IssuerBinding:
        """The issuer rule: the pinned issuer, else the binding of the configured credential (see ``_binding``)."""
        if self._issuer_rule is None:
            credential = self._credential()
            self._issuer_rule = IssuerBinding(self.issuer, credential[0] if credential else None,
                                              credential[1] if credential else "")
        return self._issuer_rule

    def _credential(self) -> Optional[Tuple[str, str]]:
        """Subclass: (store label, how errors name it) of a configured credential to bind to its issuer, or None."""
        return None

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        """Subclass: get a new token from the authorization server (the grant type's own flow)."""
        raise NotImplementedError

    def _signer(self) -> Optional[Signer]:
        """Subclass: the private_key_jwt signer, if the client uses one."""
        return None

    def _endpoint(self, grant: Grant) -> TokenEndpoint:
        """The token endpoint that renews ``grant`` (a DPoP-bound one with the key it is bound to)."""
        binding = Binding(grant.dpop_key, self._nonces) if grant.dpop_key is not None else None
        return TokenEndpoint(grant.token_endpoint, grant.issuer, grant.client, self._signer(), binding)

    def _new_endpoint(self, server: AuthServer, client: ClientIdentity) -> TokenEndpoint:
        """The token endpoint for a new grant from ``server``: with this object's DPoP key when ``dpop``.

        Raises:
            AuthError: (``unsupported_dpop_alg``) the server lists no DPoP algorithm the key can sign.
        """
        return TokenEndpoint(server.token_endpoint, server.issuer, client, self._signer(), self._binding(server))

    def _binding(self, server: AuthServer) -> Optional[Binding]:
        if not self.dpop:
            return None
        self._dpop_key = _dpop.key_for(self._dpop_key, server.dpop_algs, self._dpop_supplied, server.issuer)
        return Binding(self._dpop_key, self._nonces)

    def _bound(self, grant: Grant, endpoint: TokenEndpoint) -> Grant:
        """``grant`` with the DPoP key its token endpoint used, when the token came back DPoP-bound."""
        if endpoint.dpop is not None and grant.token.token_type == "DPoP":
            return replace(grant, dpop_key=endpoint.dpop.key)
        return replace(grant, dpop_key=None) if grant.token.token_type != "DPoP" else grant

    def _fetcher(self) -> Fetcher:
        """A fetcher for one flow, behind the egress gate for this MCP server (see ``transports._egress``)."""
        gate = _egress.DiscoveryGate.for_server(self.server_url, trusted=(self.issuer, *self._trusted_urls()))
        return Fetcher(verify=self.verify, timeout=self.http_timeout, gate=gate)

    def _trusted_urls(self) -> Tuple[str, ...]:
        """Subclass: URLs the user configured, whose origins any flow may reach (an IdP's token endpoint)."""
        return ()

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
                grant = self._probed_grant(fetch, self._probe_url, force=force, challenged_only=challenged_only)
            if grant is not None:
                self._keep(grant)

    def _probed_grant(self, fetch: Fetcher, probe_url: str, *, force: bool, challenged_only: bool) -> Optional[Grant]:
        """Probe the server for its challenge, then a grant: a new authorization when ``force``, else as after
        a 401. None: the server wants no credentials and ``challenged_only``."""
        status, header = fetch.probe(probe_url)
        if status != 401 and challenged_only:
            log.debug("%s answered %d without credentials; no login now", self.server_url, status)
            return None
        challenge = Challenge.from_header(header) if status == 401 else Challenge()
        discovery = self._discover(fetch, challenge)
        if force:
            scopes = union(challenge.scopes or discovery.resource_scopes, self.scopes)
            return self._obtain(fetch, discovery, scopes or None, None)
        return self._after_401(fetch, discovery, challenge, None, None)

    def prepare(self, url: str) -> None:
        """For mcpsync's HTTP transports, called when they open, on the opening thread. Blocking.

        Binds this auth object to ``url`` and makes sure a token is at hand
        when the server wants one, so that a login (which may wait minutes for
        a person) happens here rather than inside a request that has a
        timeout. A server that answers a plain GET without 401 is left alone.
        Raises like :meth:`login`.
        """
        self._ensure(url, force=False, challenged_only=True)



def _for(grant: Optional[Grant], discovery: Discovery) -> bool:
    """Whether ``grant`` is from the discovered authorization server, for the discovered resource."""
    return grant is not None and grant.issuer == discovery.server.issuer and grant.resource == discovery.resource


def _untried(grant: Optional[Grant], sent: Optional[str]) -> Optional[Grant]:
    """``grant`` (read from the store) when its token is not the refused one and not about to expire."""
    if grant is None or grant.token.access_token == sent or grant.token.expiring(_tokens.clock()):
        return None
    return grant
