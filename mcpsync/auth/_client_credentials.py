"""ClientCredentials: tokens for a job without a person (the client credentials grant)."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from typing import Any, Optional, Sequence, Tuple

from ..exceptions import AuthError
from . import _jwt
from ._bearer import BearerAuth, Grant
from ._binding import secret_label
from ._discovery import AuthServer, Discovery
from ._dpop import DPoPSetting
from ._fetch import Fetcher
from ._grants import Signer
from ._registration import ClientIdentity, choose_auth_method
from ._tokens import MemoryTokenStore, TokenStore

__all__ = ["ClientCredentials"]

log = logging.getLogger("mcpsync.auth")


class ClientCredentials(BearerAuth):
    """OAuth for a headless job: the client credentials grant, with a client secret or a private key.

    ::

        auth = mcpsync.ClientCredentials("my-service", client_secret=os.environ["MCP_CLIENT_SECRET"])
        auth = mcpsync.ClientCredentials("my-service", private_key=open("key.pem").read(), key_id="k1")
        with mcpsync.connect("https://example.com/mcp", auth=auth) as client:
            ...

    Discovery runs as for :class:`~mcpsync.OAuth` (from the server's 401).
    The client authenticates with ``client_secret_basic`` or
    ``client_secret_post`` (as the server supports), or, given a private key,
    with a ``private_key_jwt`` assertion (RFC 7523; its ``aud`` is the
    authorization server's issuer). A token about to expire is fetched again
    before a request needs it; nobody is ever asked anything.

    Args:
        client_id: the client registered with the authorization server.
        client_secret: its secret; or
        private_key: a PEM private key (str or bytes, or a ``cryptography`` key)
            whose public key the server knows. Needs ``pip install 'mcpsync[oauth-jwt]'``.
        key_id: the key's ``kid``, put in the assertion header.
        algorithm: the assertion's signing algorithm (``RS256``, ``ES256``, ...).
        server_url: the MCP server; by default, the first URL this auth is used for.
        scopes: scopes to ask for (with any the server's challenge names).
        store: where tokens are kept (default: memory; a new token is one request away).
        verify, timeout, max_authorizations, max_step_ups, dpop: as for :class:`~mcpsync.OAuth`.
        issuer: pin the authorization server, as for :class:`~mcpsync.OAuth`. Without
            it, a client secret is bound to the first issuer it is used with (in the
            store, so for the default memory store: for this object's life). A
            private key is not bound: its assertions name their audience.

    Thread safety: as :class:`~mcpsync.OAuth`.

    Raises:
        ValueError: neither or both of ``client_secret`` and ``private_key``.
        AuthError: (``missing_dependency``) a private key without PyJWT installed, or ``dpop``
            without cryptography.
    """

    def __init__(
        self,
        client_id: str,
        *,
        client_secret: Optional[str] = None,
        private_key: Any = None,
        key_id: Optional[str] = None,
        algorithm: str = "RS256",
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
        if (client_secret is None) == (private_key is None):
            raise ValueError("Give exactly one of client_secret and private_key")
        if private_key is not None:
            _jwt.require()
        super().__init__(server_url, store=store if store is not None else MemoryTokenStore(), scopes=scopes,
                         verify=verify, http_timeout=timeout, max_authorizations=max_authorizations,
                         max_step_ups=max_step_ups, dpop=dpop,
                         issuer=issuer)
        self.client_id = client_id
        self._secret = client_secret
        self._private_key = private_key
        self.key_id = key_id
        self.algorithm = algorithm

    def login(self, server_url: Optional[str] = None) -> None:
        """Get a token now (unless a usable one is held). Blocking; raises like the class."""
        self._ensure(server_url, force=False, challenged_only=False)

    def _credential(self) -> Optional[Tuple[str, str]]:
        if not self._secret:
            return None
        return secret_label(self.client_id, self._secret), f"the client secret of {self.client_id!r}"

    def _signer(self) -> Optional[Signer]:
        key = self._private_key
        if key is None:
            return None

        def sign(audience: str) -> str:
            return _jwt.client_assertion(self.client_id, audience, key, self.algorithm, self.key_id)

        return sign

    def _client(self, server: AuthServer) -> ClientIdentity:
        if self._private_key is None:
            return ClientIdentity(self.client_id, self._secret, choose_auth_method(server, True), (), "static")
        supported = server.auth_methods
        if supported is not None and "private_key_jwt" not in supported:
            raise AuthError(f"The authorization server {server.issuer} does not accept private_key_jwt "
                            f"(it lists {', '.join(supported) or 'nothing'})", error="unsupported_auth_method")
        return ClientIdentity(self.client_id, None, "private_key_jwt", (), "static")

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        server = discovery.server
        client = self._client(server)
        endpoint = self._new_endpoint(server, client)
        token = endpoint.client_credentials(fetch, scope=" ".join(scopes) if scopes else None,
                                            resource=discovery.resource)
        log.info("Got a token from %s with the client credentials grant", server.issuer)
        return self._bound(Grant(server.issuer, discovery.resource, server.token_endpoint, client, token, scopes),
                           endpoint)

    def _renew(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        renewed = super()._renew(fetch, grant)
        if renewed is not None:
            return renewed
        endpoint = self._endpoint(grant)
        token = endpoint.client_credentials(
            fetch, scope=" ".join(grant.scopes) if grant.scopes else None, resource=grant.resource)
        return self._bound(replace(grant, token=token), endpoint)

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        if client.source != "static" or client.client_id != self.client_id \
                or (client.auth_method == "private_key_jwt") != (self._private_key is not None):
            return None
        return ClientIdentity(self.client_id, self._secret, client.auth_method, (), "static")
