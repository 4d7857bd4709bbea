"""OAuth: log a person in to an MCP server with the authorization code flow (PKCE S256, state, resource)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

from ..exceptions import AuthError
from ._bearer import BearerAuth, Grant
from ._binding import secret_label
from ._discovery import AuthServer, Discovery
from ._dpop import DPoPSetting
from ._errors import redact
from ._fetch import Fetcher
from ._flow import LoginHandler, parse_redirect, person_for
from ._pkce import challenge_s256, new_state, new_verifier
from ._registration import ClientIdentity, choose_auth_method, register
from ._grants import TokenEndpoint
from ._tokens import FileTokenStore, Token, TokenStore, client_key
from ._urls import check_url, with_query

__all__ = ["OAuth"]

log = logging.getLogger("mcpsync.auth")


class OAuth(BearerAuth):
    """OAuth 2.1 for an MCP server, as a ``requests`` auth object: a person logs in once, then tokens are reused.

    ::

        auth = mcpsync.OAuth()                        # a browser login, tokens kept in the user's config dir
        with mcpsync.connect("https://example.com/mcp", auth=auth) as client:
            print(client.list_tools())

        requests.post("https://example.com/mcp", json=..., auth=auth)   # plain requests works too

    On the first 401 it discovers the server's authorization server, gets a
    client identity (``client_id`` given; else the ``client_metadata_url``
    when the server supports those; else dynamic registration), asks the
    person to approve (see ``login``), redeems the code and retries the
    request. Later it refreshes tokens before they expire, re-authorizes on a
    401 the refresh cannot fix, and steps up on ``403 insufficient_scope``.

    Args:
        server_url: the MCP server; by default, the first URL this auth is used for.
        client_id: a client registered with the authorization server beforehand.
        client_secret: its secret (confidential clients); sent as the server prefers
            (``client_secret_basic`` or ``client_secret_post``).
        client_metadata_url: an https URL hosting this application's client ID
            metadata document, used as the client id where supported.
        client_name: the name a dynamically registered client gets.
        scopes: scopes to ask for in addition to the ones the server names.
        redirect_uri: a fixed redirect URI (a pre-registered client usually needs
            one); by default ``http://127.0.0.1:<random port>/callback``.
        login: the person's part: ``"auto"`` (default: paste in a notebook, over
            SSH or without a display, else the browser), ``"browser"``,
            ``"paste"``, or ``fn(authorization_url) -> redirect_url``.
        open_browser: how ``"browser"`` opens a URL (default ``webbrowser.open``).
        login_timeout: seconds a person has to complete a login.
        store: where tokens and registered clients are kept (default: a
            :class:`~mcpsync.FileTokenStore` in the user's config directory).
        verify: TLS verification for the authorization server (as in ``requests``).
        timeout: seconds for each request to the authorization server.
        max_authorizations: authorizations one request may see in all, the one behind
            the token it carried included (so ``3`` is the first and two step-ups); a
            ``403 insufficient_scope`` for scopes already held is never retried.
        max_step_ups: deprecated; ``max_step_ups=n`` means ``max_authorizations=n+1``.
        dpop: bind tokens to a proof-of-possession key (DPoP, RFC 9449): ``True``
            makes a key on first use, for the algorithm the authorization server
            lists (``dpop_signing_alg_values_supported``; ES256 first, then EdDSA,
            ES384, ES512, PS256, RS256), and keeps it with the tokens in the store;
            or pass your own key (a :class:`mcpsync.auth.DPoPKey`, or a
            ``cryptography`` EC, Ed25519 or RSA private key). Every token request and
            every request to the MCP server then carries a fresh proof, and the token
            is sent as ``Authorization: DPoP``. Needs
            ``pip install 'mcpsync[oauth-jwt]'`` (``cryptography``).
        issuer: pin the authorization server: the issuer (as its metadata spells it)
            the MCP server must name, else the login is refused (``AuthError``
            ``issuer_not_allowed``). Without it, a configured client secret is bound to
            the issuer it is first used with (remembered in the store) and refused elsewhere.

    Thread safety: share one OAuth between any threads and connections to its
    server; logins and refreshes are serialised by a lock. A login blocks the
    thread that needs it. Use one OAuth per MCP server.

    Raises (from the requests it authorizes, :meth:`login` and :meth:`prepare`):
        AuthError: discovery, registration or the login failed or was refused,
            or something was unsafe (a mismatched resource or issuer, no PKCE).
        ConnectError, TransportError, RequestTimeout: the authorization server
            could not be reached.
    """

    def __init__(
        self,
        server_url: Optional[str] = None,
        *,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
        client_metadata_url: Optional[str] = None,
        client_name: str = "mcpsync",
        scopes: Optional[Sequence[str]] = None,
        redirect_uri: Optional[str] = None,
        login: Union[str, LoginHandler] = "auto",
        open_browser: Optional[Callable[[str], Any]] = None,
        login_timeout: float = 300.0,
        store: Optional[TokenStore] = None,
        verify: Any = True,
        timeout: float = 30.0,
        max_authorizations: int = 3,
        max_step_ups: Optional[int] = None,
        dpop: DPoPSetting = False,
        issuer: Optional[str] = None,
    ) -> None:
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        if not callable(login) and login not in ("auto", "browser", "paste"):
            raise ValueError(f"login must be 'auto', 'browser', 'paste' or a callable, not {login!r}")
        if client_metadata_url is not None:
            check_url(client_metadata_url, "client metadata URL")
            if urlsplit(client_metadata_url).path in ("", "/"):
                raise ValueError("client_metadata_url must be an https URL with a path")
        if redirect_uri is not None:
            check_url(redirect_uri, "redirect URI")
        super().__init__(server_url, store=store if store is not None else FileTokenStore(), scopes=scopes,
                         verify=verify, http_timeout=timeout, max_authorizations=max_authorizations,
                         max_step_ups=max_step_ups, dpop=dpop,
                         issuer=issuer)
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.redirect_uri = redirect_uri
        self.login_timeout = login_timeout
        self._login = login
        self._open_browser = open_browser

    def login(self, server_url: Optional[str] = None, *, force: bool = False) -> None:
        """Log in now, on this thread, unless a usable token is already held (or ``force``). Blocking.

        Asks the server (a GET without credentials) for its challenge, runs
        discovery and, when no stored or refreshable token will do, the
        person's part. Call it before connecting so that a slow login does not
        run into the first request's timeout.

        Raises:
            ValueError: no server URL is known, or ``server_url`` is another server.
            AuthError, ConnectError, TransportError, RequestTimeout: as for the class.
        """
        self._ensure(server_url, force=force, challenged_only=False)

    # -- the authorization code flow -----------------------------------------------------------------

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        server = discovery.server
        authorization_endpoint = _code_flow_endpoint(server)
        asked = _asked_scopes(scopes, server)
        scope = " ".join(asked) or None
        registered = self._registered_client(server)
        preferred = registered.redirect_uris[0] if registered is not None and registered.redirect_uris else None
        verifier, state = new_verifier(), new_state()
        binding = self._binding(server)  # checked before anyone is asked to log in
        with person_for(self._login, open_browser=self._open_browser, redirect_uri=self.redirect_uri,
                        preferred=preferred) as person:
            client = self._identify(fetch, server, person.redirect_uri, scope, registered)
            url = with_query(check_url(authorization_endpoint, "authorization endpoint"), {
                "response_type": "code", "client_id": client.client_id, "redirect_uri": person.redirect_uri,
                "scope": scope, "state": state, "code_challenge": challenge_s256(verifier),
                "code_challenge_method": "S256", "resource": discovery.resource,
                "dpop_jkt": binding.key.thumbprint() if binding is not None else None,  # RFC 9449 §10
            })
            log.info("Authorization needed for %s: asking for a login with %s (scopes: %s)",
                     discovery.resource, server.issuer, scope or "the server's default")
            answer = person.authorize(url, state, time.monotonic() + self.login_timeout, abort)
            redirect_uri = person.redirect_uri
        code = _code_from(parse_redirect(answer), state, server)
        endpoint = self._new_endpoint(server, client)
        token = self._redeem(fetch, endpoint, client, code=code, verifier=verifier, redirect_uri=redirect_uri,
                             resource=discovery.resource)
        log.info("Logged in with %s (granted scopes: %s)", server.issuer, token.scope or scope or "unspecified")
        return self._bound(Grant(server.issuer, discovery.resource, server.token_endpoint, client, token,
                                 tuple(asked) or None), endpoint)

    def _redeem(self, fetch: Fetcher, endpoint: TokenEndpoint, client: ClientIdentity, *, code: str, verifier: str,
                redirect_uri: str, resource: str) -> Token:
        """The token for an authorization code; a registered client the server no longer knows is forgotten."""
        try:
            return endpoint.authorization_code(fetch, code=code, verifier=verifier, redirect_uri=redirect_uri,
                                               resource=resource)
        except AuthError as exc:
            if exc.error == "invalid_client" and client.source == "dcr":
                self._store_call("delete", client_key(endpoint.issuer))  # register afresh next time
            raise

    def _credential(self) -> Optional[Tuple[str, str]]:
        if self.client_id is None or not self.client_secret:
            return None  # a public or registered-on-the-spot client has no secret of the user's to protect
        return secret_label(self.client_id, self.client_secret), f"the client secret of {self.client_id!r}"

    def _registered_client(self, server: AuthServer) -> Optional[ClientIdentity]:
        """The client registered dynamically with ``server`` before, when dynamic registration is the way."""
        if self.client_id is not None or (self.client_metadata_url is not None and server.cimd_supported):
            return None
        stored = self._store_call("load", client_key(server.issuer))
        client = ClientIdentity.from_dict(stored) if isinstance(stored, dict) else None
        return client if client is not None and client.source == "dcr" else None

    def _identify(self, fetch: Fetcher, server: AuthServer, redirect_uri: str, scope: Optional[str],
                  registered: Optional[ClientIdentity]) -> ClientIdentity:
        """Who we are to ``server``, in the spec's order: pre-registered, metadata document, registration."""
        if self.client_id is not None:
            method = choose_auth_method(server, self.client_secret is not None)
            return ClientIdentity(self.client_id, self.client_secret, method, (redirect_uri,), "static")
        if self.client_metadata_url is not None and server.cimd_supported:
            return ClientIdentity(self.client_metadata_url, None, "none", (redirect_uri,), "cimd")
        if registered is not None and redirect_uri in registered.redirect_uris:
            return registered
        return register(fetch, server, redirect_uris=[redirect_uri], client_name=self.client_name, scope=scope)

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        if self.client_id is not None:
            if client.source != "static" or client.client_id != self.client_id:
                return None
            return ClientIdentity(self.client_id, self.client_secret, client.auth_method, client.redirect_uris,
                                  "static")
        if client.source == "cimd":
            return client if client.client_id == self.client_metadata_url else None
        return client if client.source == "dcr" else None


def _code_flow_endpoint(server: AuthServer) -> str:
    """``server``'s authorization endpoint, when it can run the code flow with PKCE (S256) we can verify."""
    if server.authorization_endpoint is None:
        raise AuthError(f"The authorization server {server.issuer} has no authorization_endpoint",
                        error="discovery_failed")
    methods = server.code_challenge_methods
    if methods is None or "S256" not in methods:
        listed = "does not list code_challenge_methods_supported" if methods is None \
            else f"lists code_challenge_methods_supported {list(methods)} without S256"
        raise AuthError(f"The authorization server {server.issuer} {listed}: PKCE (S256) cannot be verified, "
                        "so mcpsync refuses to authorize with it", error="pkce_unsupported")
    return server.authorization_endpoint


def _asked_scopes(scopes: Optional[Tuple[str, ...]], server: AuthServer) -> List[str]:
    """The scopes to ask for, with ``offline_access`` (a refresh token) where the server offers it."""
    asked = list(scopes or ())
    if asked and "offline_access" in (server.scopes_supported or ()) and "offline_access" not in asked:
        asked.append("offline_access")
    return asked


def _code_from(params: dict[str, str], state: str, server: AuthServer) -> str:
    """The code in an authorization response, after checking ``state`` and ``iss`` (RFC 9207).

    A response with the wrong ``iss`` is not acted on, and its error texts are not shown.

    Raises:
        AuthError: ``state_mismatch``, ``issuer_mismatch``, the server's error
            (``access_denied``, ...), or ``invalid_response`` without a code.
    """
    if params.get("state") != state:
        raise AuthError("The authorization response does not carry this login's state; ignoring it",
                        error="state_mismatch")
    issuer = params.get("iss")
    if issuer is not None and issuer != server.issuer:
        raise AuthError(f"The authorization response names the issuer {issuer[:200]!r}, not {server.issuer!r}; "
                        "ignoring it", error="issuer_mismatch")
    if issuer is None and server.iss_parameter_supported:
        raise AuthError(f"The authorization response has no iss parameter, but {server.issuer} promises one; "
                        "ignoring it", error="issuer_mismatch")
    if "error" in params:
        error = params["error"][:64] or "access_denied"
        description = " ".join(params.get("error_description", "").split())[:300]
        text = f"The authorization server refused the login: {error}" + (f": {description}" if description else "")
        raise AuthError(redact(text, [params.get("code"), state]), error=error)
    code = params.get("code")
    if not code:
        raise AuthError("The authorization response carries no code", error="invalid_response")
    return code
