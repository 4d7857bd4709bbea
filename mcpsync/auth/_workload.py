"""WorkloadIdentity: tokens for a workload that proves who it is with its platform's signed token (SEP-1933).

A Kubernetes pod's projected service-account token, a CI job's OIDC token, a
cloud instance's metadata token: each is a JWT the platform signs for the
workload. The MCP server's authorization server trusts that platform, so the
workload trades the JWT for an access token with the JWT bearer grant
(RFC 7523). No person, and no stored secret.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import replace
from typing import Any, Callable, Optional, Sequence, Tuple, Union

from ._assertions import TokenSource
from ._bearer import BearerAuth, Grant
from ._discovery import AuthServer, Discovery
from ._dpop import DPoPSetting
from ._fetch import Fetcher
from ._grants import TokenEndpoint
from ._registration import ClientIdentity, choose_auth_method
from ._tokens import MemoryTokenStore, Token, TokenStore

__all__ = ["WorkloadIdentity"]

log = logging.getLogger("mcpsync.auth")


class WorkloadIdentity(BearerAuth):
    """OAuth for a workload: its platform-issued identity token, traded with the JWT bearer grant.

    ::

        # Kubernetes: a projected service-account token whose audience is the authorization server
        auth = mcpsync.auth.WorkloadIdentity(token_file="/var/run/secrets/tokens/mcp-token")
        # Anything else: a callable that returns a fresh token (a CI OIDC request, a metadata server...)
        auth = mcpsync.auth.WorkloadIdentity(token=get_ci_oidc_token, client_id="ci-deployer")
        with mcpsync.connect("https://example.com/mcp", auth=auth) as client:
            ...

    Discovery runs as for :class:`~mcpsync.OAuth`. The token is read afresh
    (the file re-read, the callable called) for every grant, so one the
    platform rotates is never sent stale; one whose ``exp`` has passed is not
    sent at all. A refusal (``invalid_grant``, ``invalid_scope``,
    ``unauthorized_client``) is raised as it is: no retry, no other grant.

    Args:
        token_file: the path of a file holding the identity token; or
        token: a callable returning it (called on the thread that needs it), or the token itself.
        client_id: the client id to present, when the authorization server wants one.
        client_secret: its secret, rarely used with workload identity.
        server_url, scopes, verify, timeout, max_authorizations, max_step_ups, dpop: as for
            :class:`~mcpsync.ClientCredentials`.
        store: where tokens are kept (default: memory).
        issuer: pin the authorization server (as for :class:`~mcpsync.OAuth`). Without
            it, the identity token, a bearer credential, is bound to the first issuer
            it is sent to and refused to any other.

    Thread safety: as :class:`~mcpsync.OAuth`.

    Raises:
        ValueError: neither or both of ``token_file`` and ``token``; a secret without a client id.
        AuthError: the token cannot be read or has expired (``identity_token_unavailable``,
            ``identity_token_expired``), or the authorization server refused it.
    """

    def __init__(
        self,
        token_file: Union[str, "os.PathLike[str]", None] = None,
        *,
        token: Union[str, Callable[[], str], None] = None,
        client_id: Optional[str] = None,
        client_secret: Optional[str] = None,
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
        if (token_file is None) == (token is None):
            raise ValueError("Give exactly one of token_file and token")
        if client_secret is not None and client_id is None:
            raise ValueError("client_secret needs client_id")
        super().__init__(server_url, store=store if store is not None else MemoryTokenStore(), scopes=scopes,
                         verify=verify, http_timeout=timeout,
                         max_authorizations=max_authorizations, max_step_ups=max_step_ups, dpop=dpop,
                         issuer=issuer)
        self._source_name = str(token_file) if token_file is not None else "a token callable"
        if token_file is not None:
            self.source = TokenSource(token_file, "workload identity token", is_file=True)
        else:
            assert token is not None
            self.source = TokenSource(token, "workload identity token", is_file=False)
        self.client_id = client_id
        self._secret = client_secret

    def login(self, server_url: Optional[str] = None) -> None:
        """Get a token now (unless a usable one is held). Blocking; raises like the class."""
        self._ensure(server_url, force=False, challenged_only=False)

    def _credential(self) -> Optional[Tuple[str, str]]:
        name = self.client_id or self._source_name
        return f"workload {name}", f"the workload identity token of {name!r}"

    def _client(self, server: AuthServer) -> ClientIdentity:
        client_id = self.client_id or ""
        return ClientIdentity(client_id, self._secret, choose_auth_method(server, self._secret is not None), (),
                              "static")

    def _grant_with(self, fetch: Fetcher, endpoint: TokenEndpoint, resource: str,
                    scopes: Optional[Tuple[str, ...]]) -> Token:
        return endpoint.jwt_bearer(fetch, assertion=self.source.read(), scope=" ".join(scopes) if scopes else None,
                                   resource=resource, what="The JWT bearer grant with the workload identity token")

    def _obtain(self, fetch: Fetcher, discovery: Discovery, scopes: Optional[Tuple[str, ...]],
                abort: Optional[threading.Event]) -> Grant:
        server = discovery.server
        client = self._client(server)
        endpoint = self._new_endpoint(server, client)
        token = self._grant_with(fetch, endpoint, discovery.resource, scopes)
        log.info("Got a token from %s for the workload identity token", server.issuer)
        return self._bound(Grant(server.issuer, discovery.resource, server.token_endpoint, client, token, scopes),
                           endpoint)

    def _renew(self, fetch: Fetcher, grant: Grant) -> Optional[Grant]:
        renewed = super()._renew(fetch, grant)
        if renewed is not None:
            return renewed
        endpoint = self._endpoint(grant)
        return self._bound(replace(grant, token=self._grant_with(fetch, endpoint, grant.resource, grant.scopes)),
                           endpoint)

    def _accept_client(self, client: ClientIdentity) -> Optional[ClientIdentity]:
        if client.source != "static" or client.client_id != (self.client_id or ""):
            return None
        return ClientIdentity(client.client_id, self._secret, client.auth_method, (), "static")
