"""EnterpriseAuth: enterprise-managed authorization (SEP-990, Identity Assertion JWT Authorization Grant).

The person has already signed in to the enterprise's identity provider (IdP),
and the application holds the ID token from that sign-in. Two token requests
then get an access token for the MCP server with nobody asked again:

1. RFC 8693 token exchange at the IdP's token endpoint: the ID token for an
   Identity Assertion JWT Authorization Grant (ID-JAG), addressed to the MCP
   server's authorization server (``audience`` = its issuer) for the MCP
   server (``resource``). The IdP applies the enterprise's policy here.
2. RFC 7523 JWT bearer grant at the authorization server: the ID-JAG for an
   access token, the client authenticating with its own credentials.
"""

from __future__ import annotations

import base64
import logging
import threading
from dataclasses import replace
from typing import Any, Callable, Dict, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from ..exceptions import AuthError
from ._assertions import TokenSource
from ._bearer import BearerAuth, Grant
from ._binding import secret_label
from ._discovery import AuthServer, Discovery
from ._dpop import DPoPSetting
from ._errors import server_error
from ._fetch import Fetcher
from ._registration import ClientIdentity, choose_auth_method
from ._tokens import MemoryTokenStore, Token, TokenStore
from ._urls import check_url

__all__ = ["ID_JAG_TYPE", "EnterpriseAuth", "exchange_for_id_jag"]

log = logging.getLogger("mcpsync.auth")

TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


def exchange_for_id_jag(fetch: Fetcher, idp_token_endpoint: str, *, id_token: str, audience: str, resource: str,
                        scope: Optional[str], client_id: Optional[str], client_secret: Optional[str]) -> str:
    """RFC 8693 token exchange at the IdP: ``id_token`` for an ID-JAG for ``audience`` and ``resource``.

    The IdP client authenticates with HTTP Basic when it has a secret, else by
    its ``client_id`` alone (or not at all).

    Raises:
        AuthError: the IdP refused (``.error`` is its OAuth error code) or answered
            with something other than an ID-JAG (``invalid_response``).
        ConnectError, TransportError, RequestTimeout: the request failed.
    """
    form = {"grant_type": TOKEN_EXCHANGE_GRANT, "requested_token_type": ID_JAG_TYPE, "subject_token": id_token,
            "subject_token_type": ID_TOKEN_TYPE, "audience": audience, "resource": resource}
    if scope:
        form["scope"] = scope
    headers = _client_authentication(form, client_id, client_secret)
    status, document = fetch.post_form(idp_token_endpoint, form, headers)
    secrets = [id_token, client_secret]
    what = f"The token exchange for an identity assertion (ID-JAG) at {idp_token_endpoint}"
    if status != 200 or not isinstance(document, dict):
        raise server_error(what, status, document, secrets, default="invalid_response")
    return _id_jag(document, what)


def _client_authentication(form: Dict[str, str], client_id: Optional[str],
                           client_secret: Optional[str]) -> Dict[str, str]:
    """The IdP client's authentication: HTTP Basic (the headers returned) with a secret, else its
    ``client_id`` in ``form`` (or nothing without one)."""
    if client_id and client_secret:
        pair = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        return {"Authorization": "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")}
    if client_id:
        form["client_id"] = client_id
    return {}


def _id_jag(document: Dict[str, Any], what: str) -> str:
    """The ID-JAG in a token exchange answer (``invalid_response`` when it holds another kind of token)."""
    assertion, issued = document.get("access_token"), document.get("issued_token_type")
    if not isinstance(assertion, str) or not assertion or (issued is not None and issued != ID_JAG_TYPE):
        raise AuthError(f"{what} answered without an ID-JAG (issued_token_type {str(issued)[:80]!r}); "
                        "check that the IdP supports SEP-990 for this client", error="invalid_response")
    return assertion


class EnterpriseAuth(BearerAuth):
    """OAuth through the enterprise's identity provider: the person's ID token, exchanged for an ID-JAG.

    ::

        auth = mcpsync.auth.EnterpriseAuth(
            "mcp-client", client_secret=os.environ["MCP_CLIENT_SECRET"],   # registered with the MCP AS
            idp_token_endpoint="https://idp.example.com/oauth2/token",
            id_token=lambda: sso.current_id_token(),                       # or the token itself
            idp_client_id="my-app-at-the-idp")
        with mcpsync.connect("https://example.com/mcp", auth=auth) as client:
            ...

    On the server's 401, discovery runs as for :class:`~mcpsync.OAuth`; then
    the ID token (read afresh each time: a callable is called again) is
    exchanged at the IdP for an ID-JAG whose audience is the authorization
    server's issuer and whose resource is the MCP server, and the ID-JAG is
    redeemed there with the JWT bearer grant and the client's credentials.
    A token about to expire is fetched again the same way (or refreshed, when
    a refresh token came with it).

    Args:
        client_id: the client registered with the MCP server's authorization server.
        client_secret: its secret (sent as that server prefers); None for a public client.
        idp_token_endpoint: the IdP's token endpoint (https, or http on loopback).
        id_token: the ID token, or a callable returning a current one.
        idp_client_id, idp_client_secret: how the application authenticates to the IdP.
        server_url, scopes, store, verify, timeout, max_authorizations, max_step_ups, dpop:
            as for :class:`~mcpsync.ClientCredentials` (``store`` defaults to memory).
        issuer: pin the MCP server's authorization server (as for :class:`~mcpsync.OAuth`).
            Without it, the client is bound to the first issuer it is used with: the
            person's identity assertion is never asked for another audience.

    Thread safety: as :class:`~mcpsync.OAuth`; a callable ``id_token`` runs on
    the thread that needs a token, under the auth object's lock.

    Raises:
        ValueError: ``idp_token_endpoint`` is not a safe URL.
        AuthError: the ID token is missing or expired (``identity_token_unavailable``,
            ``identity_token_expired``), or the IdP or the authorization server refused.
    """

    def __init__(
        self,
        client_id: str,
        *,
        idp_token_endpoint: str,
        id_token: Union[str, Callable[[], str]],
        client_secret: Optional[str] = None,
        idp_client_id: Optional[str] = None,
        idp_client_secret: Optional[str] = None,
        server_url: Optional[str] = None,
        scopes: Optional[Sequence[str]] = None,
        store: Optional[TokenStore] = None,
        verify: Any = True,
        timeout: float = 30.0,
        max_authorizations: int = 3,
        max_step_ups: Optional[int] = None,
        dpop: DPoPSetting = False,
        issuer: Optional[str] = None,
    ) -> None:
        try:
            self.idp_token_endpoint = check_url(idp_token_endpoint, "IdP token endpoint")
        except AuthError as exc:
            raise ValueError(str(exc)) from exc
        super().__init__(server_url, store=store if store is not None else MemoryTokenStore(), scopes=scopes,
                         verify=verify, http_timeout=timeout,
                         max_authorizations=max_authorizations, max_step_ups=max_step_ups, dpop=dpop,
                         issuer=issuer)
        self.client_id = client_id
        self._secret = client_secret
        self.source = TokenSource(id_token, "ID token", is_file=False)
        self.idp_client_id = idp_client_id
        self._idp_secret = idp_client_secret

    def login(self, server_url: Optional[str] = None) -> None:
        """Get a token now (unless a usable one is held). Blocking; raises like the class."""
        self._ensure(server_url, force=False, challenged_only=False)

    def _trusted_urls(self) -> Tuple[str, ...]:
        return (self.idp_token_endpoint,)

    def _credential(self) -> Optional[Tuple[str, str]]:
        label = secret_label(self.client_id, self._secret) if self._secret else f"enterprise {self.client_id}"
        return label, f"the enterprise client {self.client_id!r}"

    def _client(self, server: AuthServer) -> ClientIdentity:
        return ClientIdentity(self.client_id, self._secret, choose_auth_method(server, self._secret is not None), (),
                              "static")

    def _token(self, fetch: Fetcher, grant: Grant) -> Token:
        """Exchange the ID token for an ID-JAG at the IdP, and redeem it at ``grant``'s authorization server."""
        scope = " ".join(grant.scopes) if grant.scopes else None
        assertion = exchange_for_id_jag(fetch, self.idp_token_endpoint, id_token=self.source.read(),
                                        audience=grant.issuer, resource=grant.resource, scope=scope,
                                        client_id=self.idp_client_id, client_secret=self._idp_secret)
        return self._endpoint(grant).jwt_bearer(fetch, assertion=assertion, scope=scope, resource=grant.resource,
                                                what="Redeeming the identity assertion (ID-JAG)")

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        server = discovery.server
        client = self._client(server)
        endpoint = self._new_endpoint(server, client)  # checks DPoP support and makes the key first
        draft = Grant(server.issuer, discovery.resource, server.token_endpoint, client,
                      Token(access_token="-"), scopes, endpoint.dpop.key if endpoint.dpop is not None else None)
        token = self._token(fetch, draft)
        log.info("Got a token from %s with an identity assertion from %s", server.issuer, self.idp_token_endpoint)
        return self._bound(replace(draft, token=token), endpoint)

    def _renew(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        renewed = super()._renew(fetch, grant)
        if renewed is not None:
            return renewed
        return self._bound(replace(grant, token=self._token(fetch, grant)), self._endpoint(grant))

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        if client.source != "static" or client.client_id != self.client_id:
            return None
        return ClientIdentity(self.client_id, self._secret, client.auth_method, (), "static")
